"""Issue 33, continued from test_hold_departed_eager.py (same groups, producer, scenarios and
figures) for classic members on `cooperative-sticky` (KIP-429): a departure and a return are
applied in place as for eager members, so the members that stay are not even asked to
rejoin; at the window's end the one rebalance revokes nothing from them.

    cd tests/clients && .venv/bin/python -m pytest -q -s test_hold_departed_cooperative.py
"""

import pytest

from test_hold_departed_eager import scenario


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
@pytest.mark.parametrize("how", ["close", "kill", "gone"])
def test_cooperative_members_that_stay_are_not_stopped(proxy, proxy_consumers, client, how):
    scenario(proxy, proxy_consumers, client, "cooperative-sticky", how)
