"""Reports: compare heuristics side by side, and reproduce Ellard & Seltzer 2003."""
