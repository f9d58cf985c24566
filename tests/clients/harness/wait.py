"""Bounded polling: every synchronisation in the suite is a condition with a deadline."""

import time

DEFAULT_TIMEOUT_S = 60.0


class Timeout(AssertionError):
    pass


def wait_until(check, what, timeout_s=DEFAULT_TIMEOUT_S, interval_s=0.1):
    """Calls `check()` until it returns a truthy value, which is returned.

    `check` may also return `(False, seen)` to say what it saw; on timeout the failure names
    `what` and shows the last `seen`, so a failing run says where the clients were.
    """
    deadline = time.monotonic() + timeout_s
    seen = None
    while True:
        result = check()
        if isinstance(result, tuple):
            ok, seen = result
        else:
            ok = result
        if ok:
            return result
        if time.monotonic() >= deadline:
            raise Timeout(
                f"timed out after {timeout_s:.0f}s waiting for {what}; last seen:\n{seen}")
        time.sleep(interval_s)
