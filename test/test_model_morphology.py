"""Morphology vectors (paper Definition 1, Algorithm 1): construction, validation, reshaping."""
import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot, Morphology


@pytest.fixture(scope="module")
def hexa():
    return LeggedRobot.jethexa()


def test_names_and_dimensions(hexa):
    assert hexa.leg_names == ["LF", "LM", "LR", "RF", "RM", "RR"]
    assert hexa.joint_names[:3] == ["coxa_joint_LF", "femur_joint_LF", "tibia_joint_LF"]
    assert hexa.nv == 24 and len(hexa.tip_names) == 6
    assert hexa.tip_jacobian(np.zeros(18)).shape == (36, 24)


def test_paper_damage_scenarios_dimensions(hexa):
    # paper leg numbers: 1=RF 2=LF 3=RM 4=LM 5=RR 6=LR (docs/development.md)
    d1 = hexa.with_morphology(Morphology.healthy(hexa).without_leg("RM").without_leg("LM"))
    assert d1.nv == 18 and d1.tip_jacobian(np.zeros(12)).shape == (24, 18)
    assert list(d1.morphology.leg_existence) == [1, 0, 1, 1, 0, 1]
    d2 = hexa.with_morphology(Morphology.healthy(hexa).without_links("LM", 2).without_links("RR", 2))
    assert d2.nv == 20 and d2.tip_jacobian(np.zeros(14)).shape == (24, 20)
    assert list(d2.morphology.link_existence) == [1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    assert d2.tip_legs == ["LF", "LR", "RF", "RM"]
    assert abs(d2.total_mass - (2.55 - 4 * 0.09)) < 1e-12


def test_with_morphology_shares_data_and_is_cached(hexa):
    m = Morphology.from_vector(hexa, [3, 3, 0, 3, 3, 1])
    r1 = hexa.with_morphology(m)
    r2 = hexa.with_morphology([3, 3, 0, 3, 3, 1])
    assert r1 is r2 and r1.kernel_data is hexa.kernel_data and r1.full is hexa
    assert r1.with_morphology(Morphology.healthy(hexa)) is hexa.with_morphology(Morphology.healthy(hexa))


def test_existence_vector_round_trip(hexa):
    m = Morphology.from_vector(hexa, [3, 2, 1, 0, 3, 3])
    assert Morphology.from_existence(hexa, m.link_existence) == m


@pytest.mark.parametrize("vec, match", [
    ([3, 3, 3, 3, 3], "expected 6 entries"),
    ([3, 3, 3, 3, 3, 4], "leg RR: links must be an integer in \\[0, 3\\]"),
    ([3, 3, -1, 3, 3, 3], "leg LR"),
    ([3, 3, 1.5, 3, 3, 3], "leg LR"),
    ([3, "x", 3, 3, 3, 3], "leg LM"),
])
def test_malformed_counts_name_the_leg(hexa, vec, match):
    with pytest.raises(ValueError, match=match):
        Morphology.from_vector(hexa, vec)


def test_malformed_existence_vectors_name_the_leg(hexa):
    good = [1] * 18
    with pytest.raises(ValueError, match="18 entries"):
        Morphology.from_existence(hexa, good[:-1])
    bad = list(good)
    bad[4] = 2
    with pytest.raises(ValueError, match="leg LM: link 2 existence must be 0 or 1"):
        Morphology.from_existence(hexa, bad)
    bad = list(good)
    bad[10] = 0   # RF femur missing but tibia present
    with pytest.raises(ValueError, match="leg RF: link 3 is present but link 2"):
        Morphology.from_existence(hexa, bad)
    with pytest.raises(ValueError, match="unknown leg 'XX'"):
        Morphology.healthy(hexa).without_leg("XX")
    with pytest.raises(ValueError, match="first_lost must be an integer in \\[1, 3\\]"):
        Morphology.healthy(hexa).without_links("LF", 0)


def test_bad_state_input_names_the_field(hexa):
    g = np.eye(4)
    with pytest.raises(ValueError, match="q: expected shape \\(18,\\)"):
        hexa.mass_matrix(np.zeros(17))
    with pytest.raises(ValueError, match="v: contains NaN"):
        hexa.bias_forces(g, np.zeros(18), np.r_[np.nan, np.zeros(23)])
    with pytest.raises(ValueError, match="g_sb: expected a 4x4"):
        hexa.gravity_forces(np.eye(3), np.zeros(18))
    with pytest.raises(ValueError, match="tip_forces: expected shape \\(6, 3\\)"):
        hexa.forward_dynamics(g, np.zeros(18), np.zeros(24), np.zeros(24), tip_forces=np.zeros((5, 3)))
    with pytest.raises(ValueError, match="tau: contains NaN"):
        hexa.forward_dynamics(g, np.zeros(18), np.zeros(24), np.r_[np.zeros(23), np.inf])


@pytest.mark.parametrize("spec", ["healthy", "damage2"])
def test_out_receives_the_same_result(hexa, spec):
    # out= (numpy's convention) writes the very numbers of the allocating call, which test_model_pinocchio
    # compares with Pinocchio; on a reduced robot the reduced result lands in out
    r = hexa.with_morphology(Morphology.parse(hexa, spec))
    rng = np.random.default_rng(3)
    g, q, v, tau = np.eye(4), rng.uniform(-1, 1, r.nv - 6), rng.normal(size=r.nv), rng.normal(size=r.nv)
    g[:3, 3] = 0.1
    M_out, h_out, a_out = np.full((r.nv, r.nv), np.nan), np.full(r.nv, np.nan), np.full(r.nv, np.nan)
    assert r.mass_matrix(q, out=M_out) is M_out and np.array_equal(M_out, r.mass_matrix(q))
    assert r.bias_forces(g, q, v, out=h_out) is h_out and np.array_equal(h_out, r.bias_forces(g, q, v))
    assert r.forward_dynamics(g, q, v, tau, out=a_out) is a_out
    assert np.array_equal(a_out, r.forward_dynamics(g, q, v, tau))


def test_bad_out_names_it(hexa):
    g, q, v = np.eye(4), np.zeros(18), np.zeros(24)
    readonly = np.empty((24, 24))
    readonly.flags.writeable = False
    for bad in (np.empty((23, 24)), np.empty((24, 24), dtype=np.float32), readonly, np.empty((24, 48))[:, ::2],
                [[0.0] * 24] * 24):
        expected = "out: expected a writable C-contiguous float64 array of shape \\(24, 24\\)"
        with pytest.raises(ValueError, match=expected):
            hexa.mass_matrix(q, out=bad)
    with pytest.raises(ValueError, match="out: .* shape \\(24,\\), got float64 array of shape \\(18,\\)"):
        hexa.bias_forces(g, q, v, out=np.empty(18))
    with pytest.raises(ValueError, match="out: .* got int64 array"):
        hexa.forward_dynamics(g, q, v, v, out=np.zeros(24, dtype=np.int64))


def test_urdf_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="prismatic">'
                   '<parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(ValueError, match="joint 'j' has type 'prismatic'"):
        LeggedRobot.from_urdf(str(bad))
    bad.write_text('<robot name="r"><link name="a"/><link name="b"/></robot>')
    with pytest.raises(ValueError, match="exactly one root link"):
        LeggedRobot.from_urdf(str(bad))
    bad.write_text('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
                   '<parent link="a"/><child link="b"/><axis xyz="0 0 nan"/></joint></robot>')
    with pytest.raises(ValueError, match="joint 'j' axis"):
        LeggedRobot.from_urdf(str(bad))
    bad.write_text("<robot")
    with pytest.raises(ValueError, match="not well-formed"):
        LeggedRobot.from_urdf(str(bad))


def test_modularity_invariance_against_a_urdf_without_those_links(hexa):
    """with_morphology (morphology vectors, nothing re-derived) == a model parsed from a URDF that
    physically lacks the links: same joints, M, C, 𝒩, 𝒥 and forward dynamics."""
    from robot_factory import urdf_without_links
    rng = np.random.default_rng(12)
    for counts in ([3, 0, 3, 3, 0, 3], [3, 1, 3, 3, 3, 1], [1, 2, 3, 0, 2, 3]):
        reduced = hexa.with_morphology(Morphology.from_vector(hexa, counts))
        rebuilt = LeggedRobot.from_urdf_string(urdf_without_links(hexa.urdf_path, hexa.leg_names, counts))
        assert reduced.joint_names == rebuilt.joint_names and reduced.leg_names == rebuilt.leg_names
        # a leg that lost its tip link has no foot contact (Algorithm 1, step 4); the rebuilt URDF's leg ends
        # at its last remaining link instead, so compare the feet both have
        assert set(reduced.tip_names) <= set(rebuilt.tip_names)
        rows = np.concatenate([6 * rebuilt.tip_names.index(t) + np.arange(6) for t in reduced.tip_names])
        tips = [rebuilt.tip_names.index(t) for t in reduced.tip_names]
        for _ in range(5):
            g = np.eye(4)
            g[:3, 3] = rng.normal(size=3)
            q = rng.uniform(-1, 1, reduced.nv - 6)
            v = rng.normal(size=reduced.nv)
            tau = np.r_[np.zeros(6), rng.normal(size=reduced.nv - 6)]
            f = rng.normal(size=(len(reduced.tip_names), 3))
            f_rebuilt = np.zeros((len(rebuilt.tip_names), 3))
            f_rebuilt[tips] = f
            for name, a, b in (
                    ("M", reduced.mass_matrix(q), rebuilt.mass_matrix(q)),
                    ("C", reduced.coriolis_matrix(q, v), rebuilt.coriolis_matrix(q, v)),
                    ("N", reduced.gravity_forces(g, q), rebuilt.gravity_forces(g, q)),
                    ("J", reduced.tip_jacobian(q), rebuilt.tip_jacobian(q)[rows]),
                    ("vdot", reduced.forward_dynamics(g, q, v, tau, f),
                     rebuilt.forward_dynamics(g, q, v, tau, f_rebuilt))):
                assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max()), name


def test_parse_reads_every_spec_form_and_spec_round_trips():
    """One parser for every command/parameter: LEG:N items, scenario names and their aliases, link counts."""
    robot = LeggedRobot.jethexa()

    def links(spec):
        return Morphology.parse(robot, spec).links_per_leg

    assert links("LM:1") == (3, 1, 3, 3, 3, 3)                      # legs LF LM LR RF RM RR
    assert links("RR:0 LM:1") == links("LM:1,RR:0") == links({"RR": 0, "LM": 1}) == (3, 1, 3, 3, 3, 0)
    d1 = (3, 0, 3, 3, 0, 3)
    assert links("damage1") == links("scenario1") == links("RM,LM") == links("3,0,3,3,0,3") == d1
    assert links([3, 0, 3, 3, 0, 3]) == links(Morphology.from_vector(robot, d1)) == d1
    assert links("damage2") == links("scenario2") == links("LM:1 RR:1") == (3, 1, 3, 3, 3, 1)
    assert links(None) == links("") == links("healthy") == (3,) * 6
    for spec in ("healthy", "LM:1", "RR:0 LM:1", "damage2"):
        m = Morphology.parse(robot, spec)
        assert Morphology.parse(robot, m.spec()) == m
    assert Morphology.parse(robot, "damage1").spec() == "LM:0 RM:0"
    for bad, match in (("XX", "damage spec 'XX': unknown leg 'XX'.*scenario must be one of healthy, damage1"),
                       ("LF:4", r"link count 4 for LF must be in \[0, 3\]"), ("LF:x", "'x' is not a link count"),
                       ({"XX": 1}, "unknown legs"), ([3, 3], "expected 6 entries")):
        with pytest.raises(ValueError, match=match):
            Morphology.parse(robot, bad)
