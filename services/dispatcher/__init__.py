"""The dispatcher: rq workers that make one apply attempt per job and report one outcome (D1-D6)."""
