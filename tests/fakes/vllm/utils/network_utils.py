def get_ip() -> str:
    return "127.0.0.1"


def get_open_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
