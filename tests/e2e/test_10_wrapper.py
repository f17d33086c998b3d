"""The nons wrapper really refuses namespaces; without this proof a passing
suite would not show that corral works without them."""

import signal

from harness import eq, ne, contains, true, test

NONS_EXPECTED = ("unshare: EPERM\nclone: EPERM\nclone3: ENOSYS\n"
                 "setns: EPERM\nfork: ok\n")


@test
def wrapper_refuses_namespace_calls(t):
    native = t.native([t.prog("nscheck")])
    eq(native.code, 0, "native nscheck exit")
    # Natively, joining one's own user namespace is EINVAL: the EPERM seen
    # below comes from the wrapper's filter, not from missing privilege.
    contains(native.out.decode(), "setns: EINVAL\n", "native nscheck")
    wrapped = t.native([t.prog("nons"), t.prog("nscheck")])
    eq(wrapped.code, 0, "nscheck under nons: exit")
    eq(wrapped.out.decode(), NONS_EXPECTED, "nscheck under nons")


@test
def wrapper_unshare_command_fails(t):
    run = t.native([t.prog("nons"), "unshare", "-U", "true"])
    ne(run.code, 0, "nons unshare -U true: exit status")
    contains(run.err.decode(), "Operation not permitted",
             "nons unshare -U true: stderr")


@test
def wrapper_python_unshare_permission_error(t):
    # os.unshare exists from Python 3.12; call libc directly otherwise.
    code = (
        "import ctypes, os\n"
        "try:\n"
        "    if hasattr(os, 'unshare'):\n"
        "        os.unshare(os.CLONE_NEWUSER)\n"
        "    else:\n"
        "        libc = ctypes.CDLL(None, use_errno=True)\n"
        "        if libc.unshare(0x10000000) != 0:\n"
        "            e = ctypes.get_errno()\n"
        "            raise OSError(e, os.strerror(e))\n"
        "    print('unshared')\n"
        "except PermissionError:\n"
        "    print('PermissionError')\n")
    run = t.native([t.prog("nons"), "/usr/bin/python3", "-c", code])
    eq(run.code, 0, "python under nons: exit (stderr %r)" % run.err[-300:])
    eq(run.out.decode(), "PermissionError\n", "python under nons")


@test
def wrapper_kills_other_abis(t):
    # An i386 system call (int 0x80) must never get through with other
    # syscall numbers: the filter kills it. Where the kernel has no 32-bit
    # entry at all the native run already dies, and nothing can get through.
    native = t.native([t.prog("nscheck"), "int80"])
    wrapped = t.native([t.prog("nons"), t.prog("nscheck"), "int80"])
    ne(wrapped.out.decode(), "int80: ok\n", "int 0x80 under nons")
    true(wrapped.code < 0, "int 0x80 under nons: want death by a signal, "
         "got exit %s" % wrapped.code)
    if native.out.decode() == "int80: ok\n":
        eq(wrapped.code, -signal.SIGSYS, "int 0x80 under nons: signal")
