//! Handing a connection from inside the sandbox to the proxy outside: the accepted socket itself
//! goes over the proxy's Unix socket (`SCM_RIGHTS`), with a word saying what it is for — so the
//! proxy reads and writes the client's own socket, and no byte of a download is copied by a
//! relay inside (one hop, not two: the whole-process figure in docs/performance.md).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The first byte of a handover: a NUL, which never starts an HTTP request (so the proxy can tell
/// a handed-over connection from a client speaking on its socket directly).
const MARK: u8 = 0;

/// Received descriptors are closed on exec (where the flag exists: Linux; the proxy starts no
/// program after it starts serving, so elsewhere none would leak).
#[cfg(target_os = "linux")]
const CLOEXEC: libc::c_int = libc::MSG_CMSG_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const CLOEXEC: libc::c_int = 0;

/// What a handed-over connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A client that speaks to a proxy (`HTTPS_PROXY`): its request head says where to.
    Proxy,
    /// A client that speaks to `127.0.0.1:<port>` directly (a forwarded loopback port).
    Forward(u16),
}

impl Purpose {
    fn words(self) -> String {
        match self {
            Purpose::Proxy => "proxy".into(),
            Purpose::Forward(port) => format!("forward {port}"),
        }
    }

    fn read(words: &str) -> Option<Purpose> {
        match words.split_once(' ') {
            None if words == "proxy" => Some(Purpose::Proxy),
            Some(("forward", port)) => port.parse().ok().map(Purpose::Forward),
            _ => None,
        }
    }
}

/// Hand `conn` to the proxy listening on `to`'s other end, for `purpose`.
pub fn hand_over(to: &UnixStream, conn: RawFd, purpose: Purpose) -> io::Result<()> {
    let mut data = vec![MARK];
    data.extend(purpose.words().into_bytes());
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
    let mut control = control_buffer(1);
    let msg = message(&mut iov, &mut control);
    // SAFETY: the control buffer has room for one header with one descriptor (CMSG_SPACE above),
    // so CMSG_FIRSTHDR is not null and its data has room for the descriptor.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), conn);
    }
    // SAFETY: msg points at live buffers; the socket is open.
    // (No SIGPIPE to fear: Rust programs ignore it, and a closed socket is an error here.)
    let sent = unsafe { libc::sendmsg(to.as_raw_fd(), &msg, 0) };
    match sent {
        n if n < 0 => Err(io::Error::last_os_error()),
        n if (n as usize) < data.len() => Err(io::Error::other("the handover was cut short")),
        _ => Ok(()),
    }
}

/// Room for the control message of `fds` descriptors.
fn control_buffer(fds: usize) -> Vec<u8> {
    // SAFETY: CMSG_SPACE only computes a size.
    vec![0u8; unsafe { libc::CMSG_SPACE((fds * std::mem::size_of::<RawFd>()) as u32) } as usize]
}

/// A message of one buffer and a control buffer; both must outlive its use.
fn message(iov: &mut libc::iovec, control: &mut [u8]) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is a valid empty one; its pointers are set to the caller's buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() as _;
    msg
}

/// What came first on a connection to the proxy's socket: a handed-over connection and its
/// purpose, or (a client speaking on the socket itself) the first bytes it sent.
pub enum Received {
    Handed(OwnedFd, Purpose),
    Bytes(Vec<u8>),
}

/// Read the first message on `from`.
pub fn receive(from: &UnixStream) -> io::Result<Received> {
    let mut data = vec![0u8; 4096];
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
    let mut control = control_buffer(4);
    let mut msg = message(&mut iov, &mut control);
    let n = loop {
        // SAFETY: msg points at live buffers; the socket is open.
        let n = unsafe { libc::recvmsg(from.as_raw_fd(), &mut msg, CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    data.truncate(n);
    // Every descriptor that came is owned here (and closed unless it is the one handed over).
    let mut fds: Vec<OwnedFd> = Vec::new();
    // SAFETY: walking the control messages recvmsg filled in, within msg_controllen; each
    // SCM_RIGHTS message's data is a whole number of descriptors the kernel just installed.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let first = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(first.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    let purpose = data.first().filter(|b| **b == MARK).and_then(|_| Purpose::read(&String::from_utf8_lossy(&data[1..])));
    match (purpose, fds.into_iter().next()) {
        (Some(purpose), Some(fd)) => Ok(Received::Handed(fd, purpose)),
        (None, None) => Ok(Received::Bytes(data)),
        _ => Err(io::Error::other("a handover without its connection, or a connection without its word")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_connection_handed_over_is_the_same_connection() {
        let (inside, outside) = UnixStream::pair().unwrap();
        let (mut ours, theirs) = UnixStream::pair().unwrap();
        hand_over(&inside, theirs.as_raw_fd(), Purpose::Forward(11434)).unwrap();
        drop(theirs);
        let Received::Handed(fd, purpose) = receive(&outside).unwrap() else { panic!("no handover") };
        assert_eq!(purpose, Purpose::Forward(11434));
        let mut got = UnixStream::from(fd);
        ours.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        got.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        // A client speaking on the socket itself: its first bytes, as they came.
        let (mut client, server) = UnixStream::pair().unwrap();
        client.write_all(b"CONNECT x:1 HTTP/1.1\r\n").unwrap();
        let Received::Bytes(bytes) = receive(&server).unwrap() else { panic!("taken for a handover") };
        assert_eq!(bytes, b"CONNECT x:1 HTTP/1.1\r\n");
        assert_eq!(Purpose::read("proxy"), Some(Purpose::Proxy));
        assert_eq!(Purpose::read("forward x"), None);
    }
}
