"""Issue 24: the README's install steps for the robot and the robot's container recipe (docker/Dockerfile.robot)
run the same commands in the same order, so what the image does is what the README tells a user on Ubuntu
22.04 to type. The image cannot be built here (no image registry): this compares the texts."""
import os
import re
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = os.path.join(ROOT, "docker", "Dockerfile.robot")
#: the README's workspace commands, which the image does with WORKDIR /root/ros2_ws and COPY instead
WORKSPACE = re.compile(r"^(mkdir -p ~/ros2_ws/src|cd ~/ros2_ws(/src)?|git clone .+ jethexa_dynamics)$")


def _read(path):
    with open(path, encoding="utf8") as f:
        return f.read()


def _robot_section():
    text = _read(os.path.join(ROOT, "README.md"))
    start = text.index("## On the robot")
    return text[start:text.index("\n## ", start + 1)]


def _commands(lines):
    """Shell lines -> commands: continuations joined, comments dropped, split at ``&&``, ``sudo`` dropped (the
    image builds as root), and a ``source`` of a setup file already sourced dropped (each RUN is a new
    shell)."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out, sourced = [], set()
    for line in joined.splitlines():
        for cmd in re.sub(r"\s+#.*$", "", line).split("&&"):
            cmd = re.sub(r"^sudo\s+", "", " ".join(cmd.split()))
            if not cmd or cmd in sourced:
                continue
            if cmd.startswith("source "):
                sourced.add(cmd)
            out.append(cmd)
    return out


def _readme_steps():
    section = _robot_section()
    m = re.search(r"<!-- install-steps:[^>]*-->\n```bash\n(.*?)```", section, re.S)
    assert m, "no fenced install-steps block in the README's robot section"
    return _commands(m.group(1).splitlines())


def _dockerfile():
    """(instructions as (KEYWORD, argument) with continuations joined, the RUN commands between the two
    "install steps" marker lines)."""
    text = _read(DOCKERFILE)
    instructions = [(ln.split(None, 1)[0], ln.split(None, 1)[1]) for ln in
                    re.sub(r"\\\n\s*", " ", text).splitlines() if ln.strip() and not ln.startswith("#")]
    block = text[text.index("# --- install steps"):text.index("# --- end of the install steps")]
    runs = [ln.split(None, 1)[1] for ln in re.sub(r"\\\n\s*", " ", block).splitlines() if ln.startswith("RUN ")]
    return instructions, _commands(runs)


def test_the_image_runs_the_readme_install_steps_in_order():
    readme = _readme_steps()
    assert sum(bool(WORKSPACE.match(c)) for c in readme) == 4, readme
    readme = [c for c in readme if not WORKSPACE.match(c)]
    image = _dockerfile()[1]
    assert image == readme, "\n".join("%-70s | %s" % pair for pair in zip(readme + [""] * 9, image + [""] * 9))
    for needed in ("rosdep install --from-paths src -y --ignore-src", "colcon build --packages-select "
                   "jethexa_dynamics", "ros2 run jethexa_dynamics jethexa-warmup"):
        assert needed in readme, needed


def test_the_image_builds_in_the_readme_workspace_on_a_base_image_argument():
    instructions, _ = _dockerfile()
    assert instructions[0][0] == "ARG" and instructions[0][1].startswith("BASE_IMAGE=ros:humble-")
    assert ("FROM", "${BASE_IMAGE}") in instructions
    assert ("WORKDIR", "/root/ros2_ws") in instructions          # ~/ros2_ws of the image's user, root
    assert ("COPY", ". src/jethexa_dynamics") in instructions     # the README's git clone into src/
    # what the README's docker build/run commands use
    section = _robot_section()
    assert "docker build -f docker/Dockerfile.robot -t jethexa_dynamics:humble ." in section
    run = re.search(r"docker run (.*?)jethexa_dynamics:humble", re.sub(r"\\\n\s*", " ", section), re.S).group(1)
    for option in ("--device /dev/ttyTHS1", "--device /dev/i2c-1", "--device /dev/gpiochip0",
                   "-e JETSON_MODEL_NAME=JETSON_NANO", "--network host"):
        assert option in run, option
    cmd = next(a for k, a in instructions if k == "CMD")
    assert cmd == '["ros2", "launch", "jethexa_dynamics", "bringup.launch.py", "kit:=nano"]'   # the Nano kit's way


def test_one_numba_numpy_story_pins_what_compat_py310_tests_and_pip_owns_what_rosdep_does_not():
    pip = next(c for c in _readme_steps() if c.startswith("python3 -m pip install "))
    pins = dict(re.findall(r'"([A-Za-z0-9_.]+)==([0-9.]+)"', pip))
    compat = _read(os.path.join(ROOT, "scripts", "compat_py310.sh"))
    for name, env in (("numpy", "COMPAT_NUMPY"), ("numba", "COMPAT_NUMBA"), ("scipy", "COMPAT_SCIPY")):
        assert re.search(r"\$\{?%s:-%s\}" % (env, re.escape(pins[name])), compat), (name, pins[name])
    keys = {e.text.strip() for e in ET.parse(os.path.join(ROOT, "package.xml")).getroot() if e.tag.endswith("depend")}
    # what pip alone installs is not also installed (a second copy on the paths) by rosdep
    for key in ("python3-numba", "python3-transforms3d", "python3-rosbags-pip"):
        assert key not in keys, key
    for name in ("transforms3d", "rosbags", "Jetson.GPIO"):
        assert '"%s>=' % name in pip, name
