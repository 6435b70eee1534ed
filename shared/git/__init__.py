"""The only code that runs git: ref advertisements, a working copy per branch, CAS pushes."""
