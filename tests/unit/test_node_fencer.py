"""node_fencer: dfs.ha.fencing.methods parsing (tables, and hypothesis against a literal
reading of Hadoop's NodeFencer.parseMethods), sshfence arguments, the ssh argv, and
NodeFencer's try-in-order loop with hand-written fake methods. No processes here."""

from __future__ import annotations

import logging
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import IOException, exception_for_name
from hadoop_qjm.conf.configuration import Configuration
from hadoop_qjm.conf.dfs_config_keys import DFS_HA_FENCE_METHODS_KEY
from hadoop_qjm.ha.node_fencer import (
    BadFencingConfigurationException,
    FenceMethodSpec,
    FenceTarget,
    NodeFencer,
    SshArgs,
    abbreviate,
    parse_fencing_methods,
    parse_ssh_args,
    ssh_command,
)

pytestmark = pytest.mark.timeout(60)

SHELL_CLASS = "org.apache.hadoop.ha.ShellCommandFencer"
SSH_CLASS = "org.apache.hadoop.ha.SshFenceByTcpPort"
TARGET = FenceTarget("mycluster", "nn1", "nn1.example.com", 8020)


# ---- parsing: tables ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("shell(/bin/true)", [("shell", "/bin/true")]),
        ("sshfence", [("sshfence", None)]),
        ("sshfence(hdfs:2222)", [("sshfence", "hdfs:2222")]),
        ("sshfence(:2222)\nshell(true)", [("sshfence", ":2222"), ("shell", "true")]),
        (f"{SHELL_CLASS}(echo a)\n{SSH_CLASS}", [("shell", "echo a"), ("sshfence", None)]),
        # Hadoop's testWhitespaceAndCommentsInConfig, with our method names
        (
            "\n # the next one will always fail\n shell(false) # <- fails\nshell(true) \n",
            [("shell", "false"), ("shell", "true")],
        ),
        ("  shell(a)  \r\n\n\n\t sshfence \t\n", [("shell", "a"), ("sshfence", None)]),
        # the argument runs to the line's last ')': parentheses inside are the command's
        ("shell(kill $(cat /run/nn.pid))", [("shell", "kill $(cat /run/nn.pid)")]),
        ("shell(echo ))", [("shell", "echo )")]),
        ("", []),
        (" \n\t\n # only a comment\n", []),
    ],
)
def test_parses(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert parse_fencing_methods(text) == tuple(FenceMethodSpec(n, a) for n, a in expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shell(", "Unable to parse line: 'shell(' in dfs.ha.fencing.methods"),
        ("shell()", "Unable to parse line: 'shell()' in dfs.ha.fencing.methods"),
        ("shell (true)", "Unable to parse line: 'shell (true)'"),
        ("shell(true) trailing", "Unable to parse line: 'shell(true) trailing'"),
        ("she-ll(true)", "Unable to parse line: 'she-ll(true)'"),
        ("shell", "No argument passed to 'shell' fencing method in dfs.ha.fencing.methods"),
        ("nosuch(x)", "Could not find configured fencing method nosuch in dfs.ha.fencing.methods"),
        ("powershell(Stop-Process)", "Could not find configured fencing method powershell"),
        ("org.example.MyFencer", "Could not find configured fencing method org.example.MyFencer"),
        ("sshfence(a:b:22)", "Unable to parse user and SSH port: a:b:22 in dfs.ha.fencing"),
        ("sshfence(:)", "Unable to parse user and SSH port: :"),
        ("sshfence(hdfs:xx)", "Unable to parse user and SSH port: hdfs:xx"),
        ("sshfence(:99999)", "Port number '99999' invalid in dfs.ha.fencing.methods"),
        ("sshfence(:0)", "Port number '0' invalid"),
        # a '#' starts a comment even inside a command: Hadoop strips it before parsing
        ("shell(echo a # b)", "Unable to parse line: 'shell(echo a'"),
        ("shell(true)\nshell(", "Unable to parse line: 'shell('"),
    ],
)
def test_rejects_with_one_line_naming_the_method(text: str, message: str) -> None:
    with pytest.raises(BadFencingConfigurationException) as err:
        parse_fencing_methods(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_error_names_the_key_it_came_from() -> None:
    with pytest.raises(BadFencingConfigurationException, match="in my.fencing.key$"):
        parse_fencing_methods("bogus(", key="my.fencing.key")


def test_the_error_is_an_ioexception_known_by_its_java_name() -> None:
    assert issubclass(BadFencingConfigurationException, IOException)
    rebuilt = exception_for_name("org.apache.hadoop.ha.BadFencingConfigurationException", "m")
    assert type(rebuilt) is BadFencingConfigurationException
    assert str(rebuilt) == "m"


def test_parsing_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_popen(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsing started a process")

    monkeypatch.setattr(subprocess, "Popen", no_popen)
    assert len(parse_fencing_methods("sshfence(u:1)\nshell(x)")) == 2


# ---- parsing: hypothesis against a literal reading -------------------------------------------

JAVA_SPACE = " \t\n\x0b\f\r"
LINE_TERMINATORS = "\n\r\x85\u2028\u2029"
KNOWN = {
    "shell": "shell",
    "sshfence": "sshfence",
    SHELL_CLASS: "shell",
    SSH_CLASS: "sshfence",
}


def literal_strip_comment(line: str) -> str:
    """Java's ``#.*$`` (no MULTILINE): from a '#' over non-terminators to the end of the
    line, or to just before one final line terminator."""
    for i, ch in enumerate(line):
        if ch != "#":
            continue
        j = i + 1
        while j < len(line) and line[j] not in LINE_TERMINATORS:
            j += 1
        rest = line[j:]
        if rest == "" or rest == "\r\n" or (len(rest) == 1 and rest in LINE_TERMINATORS):
            return line[:i] + rest
    return line


def literal_java_trim(line: str) -> str:
    while line and ord(line[0]) <= 0x20:
        line = line[1:]
    while line and ord(line[-1]) <= 0x20:
        line = line[:-1]
    return line


def literal_ssh_arg_error(arg: str | None) -> bool:
    if not arg:
        return False
    if arg.count(":") > 1:
        return True
    if ":" not in arg:
        return False
    port = arg.split(":")[1]
    if not port or any(c not in "0123456789" for c in port):
        return True
    return not 0 < int(port) < 65536


def is_class_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in ".$")


def literal_parse(text: str) -> list[tuple[str, str | None]] | str:
    """A word-by-word reading of NodeFencer.parseMethods: the methods, or the kind of the
    first error ('line', 'unknown', 'shell-arg', 'ssh-arg')."""
    pieces = text.split("\n")
    methods: list[tuple[str, str | None]] = []
    for i, piece in enumerate(pieces):
        # the separator \s*\n\s* also eats the whitespace on both sides of each newline
        if i > 0:
            piece = piece.lstrip(JAVA_SPACE)
        if i < len(pieces) - 1:
            piece = piece.rstrip(JAVA_SPACE)
        line = literal_java_trim(literal_strip_comment(piece))
        if not line:
            continue
        end = 0
        while end < len(line) and is_class_name_char(line[end]):
            end += 1
        name, rest = line[:end], line[end:]
        if not name:
            return "line"
        if rest == "":
            arg = None
        elif (
            rest.startswith("(")
            and rest.endswith(")")
            and len(rest) > 2
            and not any(c in LINE_TERMINATORS for c in rest[1:-1])
        ):
            arg = rest[1:-1]
        else:
            return "line"
        if name not in KNOWN:
            return "unknown"
        if KNOWN[name] == "shell" and arg is None:
            return "shell-arg"
        if KNOWN[name] == "sshfence" and literal_ssh_arg_error(arg):
            return "ssh-arg"
        methods.append((KNOWN[name], arg))
    return methods


ERROR_KIND = {
    "Unable to parse line": "line",
    "Could not find configured fencing method": "unknown",
    "No argument passed": "shell-arg",
    "Unable to parse user and SSH port": "ssh-arg",
    "Port number": "ssh-arg",
}

FRAGMENTS = st.sampled_from(
    [
        "shell", "sshfence", SHELL_CLASS, SSH_CLASS, "powershell", "x.Y$z", "(", ")", "()",
        "#", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x00", "\x85", "\u2028", ":", "22",
        "99999", "user", "/bin/true", "$target_host", "-", "é", "٣",
    ]
)  # fmt: skip


NOISE = st.lists(FRAGMENTS, max_size=3).map("".join)
SPACE = st.text(alphabet=" \t\r\x0b\x00", max_size=2)
NAMES = st.sampled_from(["shell", "sshfence", SHELL_CLASS, SSH_CLASS, "nosuch"])
ARG_WORDS = ["true", "u", ":", "22", "99999", "0", "٣", "(", ")", " "]
ARGS = st.one_of(
    st.none(),
    st.lists(st.sampled_from(ARG_WORDS), max_size=4).map("".join),
    NOISE,
)
COMMENT = st.one_of(st.just(""), NOISE.map(lambda s: "#" + s))


@st.composite
def method_line(draw: st.DrawFn) -> str:
    arg = draw(ARGS)
    call = draw(NAMES) + ("" if arg is None else f"({arg})")
    return draw(SPACE) + call + draw(st.sampled_from(["", " "])) + draw(COMMENT) + draw(SPACE)


TEXTS = st.one_of(
    st.lists(method_line(), max_size=4).map("\n".join),
    st.lists(FRAGMENTS, max_size=14).map("".join),
)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
@example("shell(a)#c\r")
@example("shell(a)#c\r \n")
@example("shell(a#b\rc)")
@example("sshfence(:٣)")
def test_parser_matches_a_literal_reading(text: str) -> None:
    expected = literal_parse(text)
    try:
        got = [(m.name, m.arg) for m in parse_fencing_methods(text)]
    except BadFencingConfigurationException as e:
        kinds = [kind for prefix, kind in ERROR_KIND.items() if str(e).startswith(prefix)]
        assert kinds == [expected], (text, str(e))
    else:
        assert got == expected, text


# ---- sshfence arguments, the ssh command, small pieces --------------------------------------


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        (None, SshArgs(None, 22)),
        ("", SshArgs(None, 22)),
        ("12345", SshArgs("12345", 22)),
        (":12345", SshArgs(None, 12345)),
        ("foo:2222", SshArgs("foo", 2222)),
    ],
)
def test_ssh_args(arg: str | None, expected: SshArgs) -> None:
    assert parse_ssh_args(arg) == expected


@pytest.mark.parametrize("arg", [":", "bar.com:", ":xx", "bar.com:xx", "a:b:1", ":65536"])
def test_bad_ssh_args(arg: str) -> None:
    with pytest.raises(BadFencingConfigurationException):
        parse_ssh_args(arg)


def test_ssh_command_never_prompts_and_names_every_key() -> None:
    argv = ssh_command(
        "nn1.example.com", SshArgs("hdfs", 2222), "hdfs", ["/k/a", "/k/b"], 1500, "fuser x"
    )
    assert argv == [
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "ConnectTimeout=2", "-p", "2222", "-i", "/k/a", "-i", "/k/b",
        "-l", "hdfs", "--", "nn1.example.com", "fuser x",
    ]  # fmt: skip


@pytest.mark.parametrize(("ms", "seconds"), [(30000, "30"), (1, "1"), (0, "1"), (1001, "2")])
def test_ssh_connect_timeout_is_whole_seconds_at_least_one(ms: int, seconds: str) -> None:
    argv = ssh_command("h", SshArgs(), "u", [], ms, "c", ssh="/usr/bin/ssh")
    assert argv[0] == "/usr/bin/ssh"
    assert f"ConnectTimeout={seconds}" in argv


@pytest.mark.parametrize(
    ("cmd", "length", "expected"),
    [
        ("abcdef", 5, "a...f"),
        ("abcdef", 6, "abcdef"),
        ("abcdef", 7, "abcdef"),
        ("abcdefg", 5, "a...g"),
        ("abcdefgh", 5, "a...h"),
        ("abcdefgh", 6, "a...gh"),
        ("abcdefgh", 7, "ab...gh"),
        ("abcdefgh", 4, "abcdefgh"),
    ],
)
def test_abbreviate_as_hadoop(cmd: str, length: int, expected: str) -> None:
    assert abbreviate(cmd, length) == expected


def test_fencing_parameters_have_hadoops_names() -> None:
    assert TARGET.fencing_parameters() == {
        "target_host": "nn1.example.com",
        "target_port": "8020",
        "target_address": "nn1.example.com:8020",
        "target_nameserviceid": "mycluster",
        "target_namenodeid": "nn1",
    }


def test_a_method_prints_as_hadoop_logs_it() -> None:
    assert str(FenceMethodSpec("shell", "true")) == f"{SHELL_CLASS}(true)"
    assert str(FenceMethodSpec("sshfence")) == f"{SSH_CLASS}(null)"


# ---- NodeFencer with fake methods ---------------------------------------------------------------


class FakeMethod:
    """Answers from ``outcomes`` by argument: True, False or an exception to raise."""

    def __init__(self, outcomes: dict[str | None, bool | Exception]) -> None:
        self.outcomes = outcomes
        self.calls: list[tuple[FenceTarget, str | None]] = []

    def try_fence(self, target: FenceTarget, arg: str | None) -> bool:
        self.calls.append((target, arg))
        outcome = self.outcomes[arg]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def fencer_with(text: str, fake: FakeMethod) -> NodeFencer:
    impls = {"shell": fake, "sshfence": fake}
    return NodeFencer(parse_fencing_methods(text), Configuration(), implementations=impls)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_the_first_success_stops_the_search(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hadoop_qjm.ha.node_fencer")
    fake = FakeMethod({"a": True, "b": True})
    assert fencer_with("shell(a)\nshell(b)", fake).fence(TARGET)
    assert fake.calls == [(TARGET, "a")]
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "====== Beginning Service Fencing Process... ======",
        f"Trying method 1/2: {SHELL_CLASS}(a)",
        f"Fencing method {SHELL_CLASS}(a) was successful.",
        f"====== Fencing successful by method {SHELL_CLASS}(a) ======",
    ]


def test_a_failing_or_raising_method_is_logged_and_the_next_tried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hadoop_qjm.ha.node_fencer")
    fake = FakeMethod(
        {
            "no": False,
            "boom": RuntimeError("disk on fire"),
            "bad": BadFencingConfigurationException("bad arg"),
            None: True,
        }
    )
    assert fencer_with("shell(no)\nshell(boom)\nshell(bad)\nsshfence", fake).fence(TARGET)
    assert [arg for _, arg in fake.calls] == ["no", "boom", "bad", None]
    assert warnings_of(caplog) == [
        f"Fencing method {SHELL_CLASS}(no) was unsuccessful.",
        f"Fencing method {SHELL_CLASS}(boom) failed with an unexpected error: disk on fire",
        f"Fencing method {SHELL_CLASS}(bad) misconfigured: bad arg",
    ]
    assert f"====== Fencing successful by method {SSH_CLASS}(null) ======" in caplog.text


def test_none_succeeding_is_false(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hadoop_qjm.ha.node_fencer")
    fake = FakeMethod({"a": False, "b": OSError("gone")})
    assert not fencer_with("shell(a)\nshell(b)", fake).fence(TARGET)
    last = caplog.records[-1]
    assert (last.levelno, last.getMessage()) == (
        logging.ERROR,
        "Unable to fence service by any configured method.",
    )


@pytest.mark.parametrize("value", [None, "", "  \n\n", "# shell(true)\n"])
def test_no_method_configured_is_bad_configuration(value: str | None) -> None:
    conf = Configuration()
    conf.unset(DFS_HA_FENCE_METHODS_KEY)
    if value is not None:
        conf.set(DFS_HA_FENCE_METHODS_KEY, value)
    with pytest.raises(BadFencingConfigurationException, match="^No fencer configured for"):
        NodeFencer.create(conf)


def test_create_reads_the_key_and_reports_it() -> None:
    conf = Configuration()
    conf.set("my.key", "shell(true)\nsshfence(hdfs)")
    fencer = NodeFencer.create(conf, key="my.key")
    assert fencer.methods == (FenceMethodSpec("shell", "true"), FenceMethodSpec("sshfence", "hdfs"))
    conf.set("my.key", "shell(")
    with pytest.raises(BadFencingConfigurationException, match="in my.key$"):
        NodeFencer.create(conf, key="my.key")
