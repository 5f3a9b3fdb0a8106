"""joint_states as evidence of a lost joint (pure core): a joint its publisher stops carrying is lost under the
silence rules (min_missed_reads messages in a row, no_reply_timeout unseen); never from one missing message,
never when the publisher goes quiet as a whole, never for joints servo_driver's statuses cover."""
from jethexa_dynamics.damage.detection import DamageDetector, DetectorConfig, JointPresenceTracker, ServoStatus

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]
LEFT, RIGHT = JOINTS[:9], JOINTS[9:]
CFG = DetectorConfig(no_reply_timeout=0.4, min_missed_reads=2)


def run(det, pres, t0, t1, publishers, dt=0.02):
    """Two drivers (left and right board) publish their joints every ``dt``; returns the new faults."""
    new, t = [], t0
    while t < t1 - 1e-9:
        t += dt
        for names in publishers(t):
            pres.observe(t, names)
            new += det.update_presence(t, pres)
    return new, t


def test_a_joint_left_out_by_its_publisher_is_lost_after_the_silence_rule():
    det, pres = DamageDetector(JOINTS, LEGS, CFG), JointPresenceTracker(JOINTS)
    new, t = run(det, pres, 0.0, 1.0, lambda t: [LEFT, RIGHT])
    assert new == [] and det.detected() == [3] * 6
    gone = [j for j in RIGHT if not j.endswith("_RM")]              # RM's three servos drop off the right bus
    new, t1 = run(det, pres, t, t + 0.38, lambda t: [LEFT, gone])
    assert new == []                                                # misses, but unseen < no_reply_timeout
    new, _ = run(det, pres, t1, t1 + 0.1, lambda t: [LEFT, gone])
    assert sorted(f.joint for f in new) == ["coxa_joint_RM", "femur_joint_RM", "tibia_joint_RM"]
    assert all(f.source == "joint_states" and "absent from joint_states" in f.reason for f in new)
    assert det.detected() == [3, 3, 3, 3, 0, 3]


def test_one_missing_message_and_a_quiet_publisher_are_no_loss():
    det, pres = DamageDetector(JOINTS, LEGS, CFG), JointPresenceTracker(JOINTS)
    _, t = run(det, pres, 0.0, 0.5, lambda t: [LEFT, RIGHT])
    # one message without the LF tibia, then it is back; later a single message far apart in time
    new, t = run(det, pres, t, t + 0.02, lambda t: [LEFT[:-1], RIGHT])
    new2, t = run(det, pres, t, t + 0.5, lambda t: [LEFT, RIGHT])
    assert new == new2 == []
    # the right board's publisher goes quiet as a whole for 3 s (a stopped node, a starved process): its
    # joints are stale but nobody is *left out* -> no loss; the left board keeps publishing
    new, t = run(det, pres, t, t + 3.0, lambda t: [LEFT])
    assert new == [] and det.detected() == [3] * 6
    # a single message without one joint after a long gap of its stream: sparse, so it proves nothing (not
    # even one miss: a publisher that had no time to read leaves joints out)
    pres.observe(t + 0.5, LEFT[1:])
    assert det.update_presence(t + 0.5, pres) == []
    assert pres.consecutive_misses[LEFT[0]] == 0 and pres.late_messages == 1


def test_rotating_subsets_are_not_misses():
    """servo_driver before its first command publishes only the joints it read in that cycle (3 per cycle,
    round-robin): the other joints are not 'left out'."""
    det, pres = DamageDetector(JOINTS, LEGS, CFG), JointPresenceTracker(JOINTS)
    groups = [JOINTS[i:i + 3] for i in range(0, 18, 3)]
    new, _ = run(det, pres, 0.0, 5.0, lambda t: [groups[int(round(t / 0.02)) % 6]], dt=0.1)
    assert new == [] and max(pres.consecutive_misses.values()) == 0


def test_joints_covered_by_servo_statuses_are_judged_by_them_only():
    det, pres = DamageDetector(JOINTS, LEGS, CFG), JointPresenceTracker(JOINTS)
    det.update(0.0, [ServoStatus(j, i + 1, reads=5, last_reply_age=0.01) for i, j in enumerate(RIGHT)])
    _, t = run(det, pres, 0.0, 0.5, lambda t: [LEFT, RIGHT])
    gone_r = [j for j in RIGHT if not j.endswith("_RR")]
    gone_l = [j for j in LEFT if not j.endswith("_LR")]
    new, _ = run(det, pres, t, t + 1.0, lambda t: [gone_l, gone_r])
    assert sorted(f.joint for f in new) == ["coxa_joint_LR", "femur_joint_LR", "tibia_joint_LR"]
    assert det.detected() == [3, 3, 0, 3, 3, 3]


def test_unlatched_presence_fault_clears_when_the_joint_is_back():
    det = DamageDetector(JOINTS, LEGS, DetectorConfig(no_reply_timeout=0.4, min_missed_reads=2, latch=False))
    pres = JointPresenceTracker(JOINTS)
    _, t = run(det, pres, 0.0, 0.5, lambda t: [LEFT, RIGHT])
    new, t = run(det, pres, t, t + 1.0, lambda t: [LEFT[1:], RIGHT])
    assert [f.joint for f in new] == [LEFT[0]] and det.detected()[0] == 0
    run(det, pres, t, t + 0.1, lambda t: [LEFT, RIGHT])
    assert det.detected() == [3] * 6


def test_a_starved_publisher_or_a_late_reader_is_not_absence():
    """Issue 21: a starting (or starved) servo_driver published 2 messages in 0.51 s, each without the RF femur
    (it had no time to read it), and the monitor named RF:1 on a healthy robot. Timing evidence counts only
    from messages that show the publisher on its rhythm (stamps <= max_interval apart) and the reader on time
    (received <= max_latency after the stamp); a genuine loss is still found once both are on time again."""
    det, pres = DamageDetector(JOINTS, LEGS, CFG), JointPresenceTracker(JOINTS)
    _, t = run(det, pres, 0.0, 0.5, lambda t: [LEFT + RIGHT])
    femur_rf = "femur_joint_RF"
    without = [j for j in LEFT + RIGHT if j != femur_rf]
    # starved publisher: one message every 0.25 s, each leaving the femur out, for 1.5 s
    for k in range(1, 7):
        pres.observe(t + 0.25 * k, without)
        assert det.update_presence(t + 0.25 * k, pres) == []
    assert pres.consecutive_misses[femur_rf] == 0
    t += 1.5
    # a late reader: messages at the publisher's rhythm (stamps 0.02 s apart) read in a burst 0.5 s later
    _, t = run(det, pres, t, t + 0.2, lambda t: [LEFT + RIGHT])
    stamps = [t + 0.02 * k for k in range(1, 31)]
    for s in stamps:
        pres.observe(stamps[-1] + 0.5, without, stamp=s)
        assert det.update_presence(stamps[-1] + 0.5, pres) == []
    assert det.detected() == [3] * 6
    # on time again and the femur really gone: found by the usual rule (0.4 s of on-time misses)
    t = stamps[-1] + 0.5
    new = []
    for k in range(1, 30):
        pres.observe(t + 0.02 * k, without, stamp=t + 0.02 * k - 0.005)
        new += det.update_presence(t + 0.02 * k, pres)
    assert [f.joint for f in new] == [femur_rf] and det.detected() == [3, 3, 3, 1, 3, 3]
    assert 0.4 <= float(new[0].reason.split("for ")[1].split(" s")[0]) < 0.5
