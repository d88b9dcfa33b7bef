"""Campaign modes that run several implementations per generated kernel: `tlfuzz
--passes` and `tlfuzz --compare-levels`."""
