"""The branch worker: owns branches by lease, turns object events into commits and CAS pushes."""
