"""Files and resources around a run: `.npz` arguments (`args`, `npzcheck`), outputs written
atomically (`outfile`), memory checks (`memlimit`), other programs' text made safe for reports
(`foreigntext`)."""
