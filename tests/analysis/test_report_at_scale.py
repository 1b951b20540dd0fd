"""Issue 40, item 5: the report reads at 500 members and 5,000 partitions. In headless Chromium at 1280x900, the
first screen shows the group (its state band, the partitions without an owner over time, partitions per member, the
rounds) and no partition row: the per-partition views are folded, and open on request. Both protocols: a classic
group's band carries generations, a KIP-848 group's its epochs and a strip of each member's epoch (folded here)."""
import json
import re
import subprocess

import pytest

from analysis import analyze
from analysis_runs import Run
from browser import chromium, in_chromium

MEMBERS, PER_MEMBER = 500, 10
MEASURE = """<script>
const rect = id => document.getElementById(id) && document.getElementById(id).getBoundingClientRect();
const rows = [...document.querySelectorAll('#timeline rect.owner, #partitions tbody tr')];
const shown = rows.filter(r => r.checkVisibility());
const strip = [...document.querySelectorAll('#member-epochs rect.member-epoch')];
document.body.setAttribute('data-measure', JSON.stringify({
  group_bottom: rect('group').bottom, band_bottom: rect('state-band').bottom, unowned_bottom: rect('unowned').bottom,
  per_member_bottom: rect('per-member').bottom, rows: rows.length, shown: shown.length,
  strip: strip.length, strip_shown: strip.filter(r => r.checkVisibility()).length,
  folds: [...document.querySelectorAll('details')].map(d => d.id + ':' + d.open)}));
</script>"""


def big_group(root) -> Run:
    """500 members with 10 partitions each; member-500 crashes at 20 s and its partitions go to member-1..10 at
    31 s (one each). Four records a partition, consumed as produced."""
    r = Run(root, "parquet")
    for m in range(1, MEMBERS + 1):
        name = f"member-{m}"
        mine = [f"t:{p}" for p in range((m - 1) * PER_MEMBER, m * PER_MEMBER)]
        r.event(name, "started", 0, client="librdkafka", protocol="classic", assignor="cooperative-sticky", commit="sync")
        r.event(name, "assigned", 1_000, mine, generation=1)
    r.event("member-500", "crashed", 20_000)
    for m in range(1, 11):
        r.event(f"member-{m}", "assigned", 31_000, [f"t:{4990 + m - 1}"], generation=2)
    for p in range(MEMBERS * PER_MEMBER):
        r.produce("t", p, range(4), at=2_000 + p, step=5_000)
        owner = p // PER_MEMBER + 1
        r.consume(f"member-{owner}", "t", p, range(2), at=2_010 + p, step=5_000)
        late = owner if owner != 500 else p - 4990 + 1
        r.consume(f"member-{late}", "t", p, range(2, 4), at=32_000 + p % 1000, step=1)
    r.fault("member_crash-1", 20_000, 40_000, kind="member_crash", target="member-500", ends_process=True)
    r.group_state(0, "sampler", interval_ms=500, protocol="classic", api="DescribeGroups v5")
    r.group_state(1_200, state="Stable", members=500, assigned=5000, since=700)
    r.group_state(30_500, state="PreparingRebalance", members=500, assigned=5000, since=30_000)
    r.group_state(31_500, state="Stable", members=499, assigned=5000, since=30_800)
    r.group_state(45_000, "sampler_end", samples=90)
    return r


def coordinator_log(r: Run) -> Run:
    """The coordinator's two rounds: the 500 members' first (499 admitted while it waited), and member-500's
    expiry at 30 s; in Kafka 4.3's sentences."""
    u = "-96761621-2db5-4623-894f-c9aacef4a83b"
    r.coordinator_line(500, f"Preparing to rebalance group g in state PreparingRebalance with old generation 0 (reason: "
                            f"Adding new member member-1{u} with group instance id null; client reason: not provided).")
    for m in range(2, MEMBERS + 1):
        r.coordinator_line(600, f"Pending dynamic member with id member-{m}{u} joins group g in PreparingRebalance "
                                "state. Adding to the group now.")
    r.coordinator_line(900, "Stabilized group g generation 1 with 500 members.")
    r.coordinator_line(990, f"Assignment received from leader member-1{u} for group g for generation 1. The group has "
                            "500 members, 0 of which are static.")
    r.coordinator_line(30_000, f"Member member-500{u} in group g has failed, removing it from the group.")
    r.coordinator_line(30_000, f"Preparing to rebalance group g in state PreparingRebalance with old generation 1 "
                               f"(reason: removing member member-500{u} on heartbeat expiration.).")
    r.coordinator_line(30_800, "Stabilized group g generation 2 with 499 members.")
    r.coordinator_line(30_950, f"Assignment received from leader member-1{u} for group g for generation 2. The group "
                               "has 499 members, 0 of which are static.")
    return r


def first_screen(run_dir, tmp_path) -> tuple[dict, str]:
    """The page measured in Chromium at 1280x900 (see MEASURE), and its DOM; a screenshot of the first screen too."""
    page = run_dir / "report" / "index.html"
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    measured = tmp_path / "measure.html"
    measured.write_text(html.replace("</body>", MEASURE + "</body>"))
    cmd = chromium(tmp_path / "profile", "--window-size=1280,900")
    dom = subprocess.run(cmd + ["--dump-dom", measured.as_uri()], capture_output=True, text=True, timeout=180).stdout
    found = re.search(r'data-measure="([^"]*)"', dom)
    assert found, dom[:2000]
    shot = tmp_path / "first-screen.png"
    subprocess.run(cmd + [f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)
    assert shot.is_file() and shot.stat().st_size > 20_000
    return json.loads(found.group(1).replace("&quot;", '"')), dom


@in_chromium
def test_the_first_screen_shows_the_group_not_partition_rows_at_500_members_and_5000_partitions(tmp_path, spark):
    run_dir = coordinator_log(big_group(tmp_path / "run")).write()
    summary = analyze(run_dir, spark=spark)
    assert [(r["generation"], r["members"], r["join_ms"], r["sync_ms"], len(r["joined"]))
            for r in summary["coordinator_rounds"]["rounds"]] == [(1, 500, 400, 90, 499), (2, 499, 800, 150, 0)]
    assert summary["valid"] is True and len(summary["members"]) == MEMBERS and len(summary["partitions"]) == 5000
    m, dom = first_screen(run_dir, tmp_path)
    assert m["group_bottom"] <= 900, m  # the group's figures, band and charts on the first screen
    assert m["rows"] >= 5000 and m["shown"] == 0, m  # every partition row is there, folded
    assert set(m["folds"]) == {"timeline-fold:false", "partitions-fold:false", "coordinator-round-table:false"}, m
    assert "2 rounds, as the coordinator logged them" in dom and "member-2, member-3, member-4 and 496 more" in dom
    assert "500 members · 5,000 partitions" in dom and "min 10, median 10, max 11" in dom
    # both rounds from the coordinator's log: the 150 ms CompletingRebalance no sample saw is drawn, not inferred
    assert dom.count('class="state log" data-state="CompletingRebalance"') == 2 and 'class="state inferred"' not in dom
    assert 'data-state="PreparingRebalance"' in dom and "from the coordinator's log" in dom


def kip848_group(root) -> Run:
    """500 KIP-848 members with 10 partitions each (uniform assignor); member-501 joins at 20 s and takes the first
    partition of member-1..10, which revoke it at 20.6 s: those ten are behind the target assignment's epoch from
    20.5 s to 21.5 s, the coordinator sampled every 500 ms (ConsumerGroupDescribe)."""
    r = Run(root, "parquet")
    first = {m: f"t:{(m - 1) * PER_MEMBER}" for m in range(1, 11)}
    for m in range(1, MEMBERS + 1):
        name = f"member-{m}"
        mine = [f"t:{p}" for p in range((m - 1) * PER_MEMBER, m * PER_MEMBER)]
        r.event(name, "started", 0, client="librdkafka", protocol="consumer", assignor="uniform", commit="sync")
        r.event(name, "assigned", 1_000, mine)
    r.event("member-501", "started", 20_000, client="librdkafka", protocol="consumer", assignor="uniform", commit="sync")
    for m, p in first.items():
        r.event(f"member-{m}", "revoked", 20_600, [p])
    r.event("member-501", "assigned", 21_000, list(first.values()))
    moved = {(m - 1) * PER_MEMBER for m in first}
    for p in range(MEMBERS * PER_MEMBER):
        r.produce("t", p, range(4), at=2_000 + p, step=5_000)
        owner = f"member-{p // PER_MEMBER + 1}"
        r.consume(owner, "t", p, range(2), at=2_010 + p, step=5_000)
        r.consume("member-501" if p in moved else owner, "t", p, range(2, 4), at=22_000 + p % 1000, step=1)
    r.fault("member_join-1", 20_000, 20_000, kind="member_join", target="member-501")
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v1")
    every = {f"member-{m}": 1 for m in range(1, MEMBERS + 1)}
    r.group_state(1_200, state="Stable", members=500, assigned=5000, group_epoch=1, assignment_epoch=1,
                  member_epochs=every, since=700)
    behind = {**{k: 2 for k in every}, **{f"member-{m}": 1 for m in first}, "member-501": 2}
    r.group_state(20_500, state="Reconciling", members=501, assigned=5000, group_epoch=2, assignment_epoch=2,
                  member_epochs=behind, since=20_000)
    r.group_state(21_500, state="Stable", members=501, assigned=5000, group_epoch=2, assignment_epoch=2,
                  member_epochs={k: 2 for k in behind}, since=21_000)
    r.group_state(45_000, "sampler_end", samples=90)
    return r


@pytest.mark.slow  # make test's 30 minutes: the 500-member first screen above stays there
@in_chromium
def test_a_kip848_group_of_500_shows_its_epochs_and_folds_each_members_strip(tmp_path, spark):
    run_dir = kip848_group(tmp_path / "run").write()
    summary = analyze(run_dir, spark=spark)
    assert summary["valid"] is True and len(summary["members"]) == MEMBERS + 1 and len(summary["partitions"]) == 5000
    m, dom = first_screen(run_dir, tmp_path)
    assert m["group_bottom"] <= 900, m  # the group's figures, band and charts on the first screen
    assert m["rows"] >= 5000 and m["shown"] == 0, m
    assert m["strip"] == MEMBERS + 1 and m["strip_shown"] == 0, m  # a row a member, there and folded
    assert "member-epochs-folded:false" in m["folds"] and "timeline-fold:false" in m["folds"], m
    assert "each member's epoch: 501 members, 10 of them behind the target assignment at some time" in dom
    assert 'data-state="Reconciling"' in dom and ">e2/2<" in dom and 'class="state inferred"' not in dom
    assert "501 members · 5,000 partitions" in dom
