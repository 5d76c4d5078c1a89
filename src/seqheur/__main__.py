from seqheur.cli import main

main()
