"""sockerrs.py - the kernel's connect and bind errors, as a program sees them: run once on
kernel TCP and once under libpspreload by test/shell/preload_errors.sh, whose transcripts
must be the same.

usage: sockerrs.py PEER_ADDR PEER_PORT CLOSED_PORT
"""
import errno
import socket
import sys
import time

PEER = (sys.argv[1], int(sys.argv[2]))
CLOSED = (sys.argv[1], int(sys.argv[3]))


def result(call):
    """ok, or the errno name the call failed with"""
    try:
        call()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


# ECONNREFUSED: a port of the peer's node that nobody listens on
s = socket.socket()
print("closed port:", result(lambda: s.connect(CLOSED)))
s.close()
# EADDRINUSE at bind: a listener's own address
lsn = socket.socket()
lsn.bind(("127.0.0.1", 0))
lsn.listen(0)
b = socket.socket()
print("bind to a listener's address:", result(lambda: b.bind(lsn.getsockname())))
b.close()
# at connect: two sockets on one local port (SO_REUSEADDR) to the same peer
c1, c2 = socket.socket(), socket.socket()
for c in (c1, c2):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
c1.bind(("127.0.0.1", 0))
c2.bind(c1.getsockname())
print("first from the port:", result(lambda: c1.connect(PEER)))
print("second from the port:", result(lambda: c2.connect(PEER)))
c1.close()
c2.close()
# ETIMEDOUT: a listener whose accept queue is full drops the SYN; one retry (TCP_SYNCNT)
f = socket.socket()
f.connect(lsn.getsockname())  # fills the queue (backlog 0)
time.sleep(0.2)
t = socket.socket()
t.setsockopt(socket.IPPROTO_TCP, socket.TCP_SYNCNT, 1)
t0 = time.monotonic()
r = result(lambda: t.connect(lsn.getsockname()))
print("full accept queue:", r, "after about", round(time.monotonic() - t0), "s")
