"""Test-side helpers of the real-client suite: the host process, the client agents, waiting,
and the reference assignors the clients' assignments are checked against."""
