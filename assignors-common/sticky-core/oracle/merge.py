"""Pairs each scenario with Kafka's answer and keeps the cases the port must reproduce.

Left out, and counted, the groups the port deliberately answers differently on (see the core's
crate docs): where Kafka threw; where Kafka's answer is one the host refuses (a partition given
to a member that does not subscribe to its topic, a partition given twice, or, cooperative, a
partition given to one member while another still claims it at the highest generation among
its claimants); and where some member subscribes to nothing while all the others subscribe to
the same topics (Kafka's subscription check may then call the group equal)."""
import sys

def blocks(text, kind):
    out, cur, name = {}, [], None
    for line in text.splitlines():
        if line.startswith(kind + " "):
            name, cur = line.split()[1], [line]
        elif name is not None:
            cur.append(line)
            if line == "end":
                out[name] = cur
                name = None
    return out

def parts(field):
    if field == "-":
        return []
    out = []
    for tp in field.split(","):
        t, p = tp.rsplit(":", 1)
        out.append((t, int(p)))
    return out

def empty_subscription_quirk(scenario):
    subs = [line.split(" ")[2] for line in scenario if line.startswith("member ")]
    rest = set(t for t in subs if t != "-")
    return "-" in subs and len(rest) == 1


def refused(scenario, result):
    cooperative = "flavor cooperative" in scenario
    subs, claims = {}, {}
    for line in scenario:
        f = line.split(" ")
        if f[0] == "member":
            subs[f[1]] = set() if f[2] == "-" else set(f[2].split(","))
            gen = int(f[4])
            for tp in parts(f[3]):
                claims.setdefault(tp, []).append((gen, f[1]))
    seen = set()
    for line in result:
        f = line.split(" ")
        if f[0] != "assigned":
            continue
        for tp in parts(f[2]):
            if tp[0] not in subs[f[1]] or tp in seen:
                return True
            seen.add(tp)
            if cooperative and tp in claims:
                top = max(g for g, _ in claims[tp])
                if any(g == top and m != f[1] for g, m in claims[tp]):
                    return True
    return False

scen, res = open(sys.argv[1]).read(), open(sys.argv[2]).read()
s, r = blocks(scen, "scenario"), blocks(res, "result")
kept = threw = bad = quirk = 0
print("# " + sys.argv[3])
for name, lines in s.items():
    if any(l.startswith("error") for l in r[name]):
        threw += 1
        continue
    if empty_subscription_quirk(lines):
        quirk += 1
        continue
    if refused(lines, r[name]):
        bad += 1
        continue
    kept += 1
    print("\n".join(lines))
    print("\n".join(r[name]))
sys.stderr.write("kept %d, Kafka threw %d, Kafka's answer refused by the host %d, "
                 "empty subscription next to equal ones %d\n" % (kept, threw, bad, quirk))
