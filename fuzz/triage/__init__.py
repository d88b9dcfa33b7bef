"""After a finding: `reproduce` (`tlfuzz reproduce`), `triage`/`impl`/`saved` (`tlfuzz triage`
and the campaign's triage of a finding just saved), `reduce` (Lithium over a kernel), `clexec`
(running OpenCL C with a finding's arguments), `reproducer` (a vendor's stand-alone directory),
`cli` (the `tlfuzz triage` command)."""
