"""Tests of the shared HTTP/1.1 server core (webs/httpserver.py) with a tiny echo web,
in process on 127.0.0.x and a free port.  What the sample web and changing web tests do
not reach: pipelining order, malformed and oversized heads, 499, request bodies, the log
format with extra fields.  Every network wait is bounded."""
import asyncio
import time

import pytest

from webs import httpserver
from webs.httpserver import Host, RequestLog, parse_head, reserve_port, response_head

TIMEOUT = 5
ADDRESSES = ["127.0.0.1", "127.0.0.2"]


class EchoServer(httpserver.HTTPServer):
    """Answers "<host> <method> <path> <x-tag header>"; logs the body length as a field."""
    want_headers = True
    no_log_fields = ("none",)

    def head(self, status, headers):
        return response_head(status, headers, "echo")

    def answer(self, host, method, path, headers):
        body = f"{host.index} {method} {path} {headers.get('x-tag', '')}".encode()
        return 200, self.head(200, [("Content-Length", str(len(body)))]), body, (len(body),)


def _serve(tmp_path, delay, talk):
    """Run `talk(port)` (a coroutine function) against an echo web of two hosts; return
    its result and the log lines."""
    log_path = tmp_path / "requests.log"

    async def main():
        sock = reserve_port(ADDRESSES[0])
        port = sock.getsockname()[1]
        hosts = [Host(i, f"{a}:{port}", delay) for i, a in enumerate(ADDRESSES)]
        server = EchoServer(hosts, RequestLog(log_path))
        listeners = await server.listen(ADDRESSES, port, sock)
        try:
            return await asyncio.wait_for(talk(port), TIMEOUT)
        finally:
            for listener in listeners:
                listener.close()
            for connection in list(server.connections):
                connection.transport.abort()
            await asyncio.sleep(0)
            server.log.close()

    result = asyncio.run(main())
    return result, [line.split("\t") for line in log_path.read_text().splitlines()]


async def _exchange(port, data: bytes, address=ADDRESSES[0], close_after=False) -> bytes:
    """Send `data`, read until the server closes or nothing comes for 0.3 s."""
    reader, writer = await asyncio.open_connection(address, port)
    writer.write(data)
    if close_after:
        writer.close()
        return b""
    got = b""
    while True:
        try:
            chunk = await asyncio.wait_for(reader.read(65536), 0.3)
        except asyncio.TimeoutError:
            break
        if not chunk:
            got += b"<EOF>"
            break
        got += chunk
    writer.close()
    return got


def _responses(data: bytes, heads=()):
    """([(head, body)], what is left) of a byte stream of responses (bodies by
    Content-Length; none for the answers numbered in `heads`, to HEAD requests)."""
    out = []
    while data.startswith(b"HTTP/1.1"):
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        body = b"" if len(out) in heads else rest[:length]
        out.append((head.decode("latin-1"), body))
        data = rest[len(body):]
    return out, data


# ------------------------------------------------------------------ parser
def test_parse_head_reads_the_request_line_and_the_fields_that_matter():
    assert parse_head(b"GET /a?b=1#frag HTTP/1.1\r\nHost: x") == ("GET", "/a?b=1", True, 0, None)
    assert parse_head(b"GET http://x:1/p?q#f HTTP/1.1") == ("GET", "/p?q", True, 0, None)
    assert parse_head(b"GET http://x HTTP/1.1")[1] == "/"
    assert parse_head(b"GET / HTTP/1.0")[2] is False
    assert parse_head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive")[2] is True
    assert parse_head(b"GET / HTTP/1.1\r\nConnection: foo, close")[2] is False
    assert parse_head(b"POST / HTTP/1.1\r\nContent-Length: 12")[3] == 12
    headers = parse_head(b"GET / HTTP/1.1\r\nIf-None-Match: \"a\"\r\nif-none-match:  \"b\" \r\nX:", True)[4]
    assert headers == {"if-none-match": '"a", "b"', "x": ""}


@pytest.mark.parametrize("head", [b"GET /", b"GET / HTTP/2", b"GET /  HTTP/1.1", b"GET / HTTP/1.1\r\nno colon",
                                  b"GET / HTTP/1.1\r\nContent-Length: x",
                                  b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked"])
def test_parse_head_refuses_malformed_heads(head):
    assert parse_head(head) is None and parse_head(head, True) is None


def test_the_log_keeps_its_format_and_escapes_paths(tmp_path):
    log = RequestLog(tmp_path / "log")
    log.add(1.5, 2.25, "h:1", "GET", "/a\tb\nc", 200, 7)
    log.add(1.0, 2.0, "h:1", "HEAD", "/", 304, 8, (3,))
    log.close()
    assert (tmp_path / "log").read_text() == ("1.500000\t2.250000\th:1\tGET\t/a%09b%0Ac\t200\t7\n"
                                              "1.000000\t2.000000\th:1\tHEAD\t/\t304\t8\t3\n")
    RequestLog(None).add(1, 2, "h", "GET", "/", 200, 1)       # no file: nothing, no error


# ------------------------------------------------------------------ server
def test_pipelined_requests_are_answered_in_order_after_the_delay(tmp_path):
    requests = (b"GET /1 HTTP/1.1\r\nX-Tag: a\r\n\r\n"
                b"POST /2 HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"
                b"HEAD /3 HTTP/1.1\r\n\r\n"
                b"\r\nGET /4 HTTP/1.1\r\nX-Tag: d\r\n\r\n")
    began = time.time()
    data, lines = _serve(tmp_path, 0.05, lambda port: _exchange(port, requests))
    answers, rest = _responses(data, heads=(2,))
    assert rest == b""
    assert [body for _, body in answers] == [b"0 GET /1 a", b"", b"", b"0 GET /4 d"]
    assert answers[1][0].startswith("HTTP/1.1 405 Method Not Allowed\r\nServer: echo\r\nAllow: GET, HEAD\r\n")
    assert answers[2][0].startswith("HTTP/1.1 200 OK") and "Content-Length: 10" in answers[2][0]
    assert all(head.endswith("Connection: keep-alive") for head, _ in answers)
    assert [f[2:] for f in lines] == [[lines[0][2], *fields]
                                      for fields in (["GET", "/1", "200", "1", "10"],
                                                   ["POST", "/2", "405", "1", "none"],
                                                   ["HEAD", "/3", "200", "1", "10"],
                                                   ["GET", "/4", "200", "1", "10"])]
    starts, ends = [float(f[0]) for f in lines], [float(f[1]) for f in lines]
    assert began <= starts[0] and all(s <= e for s, e in zip(starts, ends))
    # one at a time: each waits its delay after the previous answer was written
    assert all(later - earlier >= 0.049 for earlier, later in zip(ends, ends[1:]))
    assert ends[0] - starts[0] >= 0.049


def test_connection_close_and_http_1_0_end_the_connection(tmp_path):
    async def talk(port):
        closing = await _exchange(port, b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
        old = await _exchange(port, b"GET /c HTTP/1.0\r\n\r\n")
        kept = await _exchange(port, b"GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        return closing, old, kept

    (closing, old, kept), lines = _serve(tmp_path, 0.0, talk)
    assert closing.endswith(b"Connection: close\r\n\r\n0 GET /a <EOF>") and b"/b" not in closing
    assert old.endswith(b"Connection: close\r\n\r\n0 GET /c <EOF>")
    assert kept.endswith(b"Connection: keep-alive\r\n\r\n0 GET /d ")
    assert [f[4] for f in lines] == ["/a", "/c", "/d"]
    assert len({f[6] for f in lines}) == 3                    # a serial per connection


@pytest.mark.parametrize("request_bytes", [
    b"nonsense\r\n\r\nGET /after HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"GET / HTTP/1.1\r\nX: " + b"a" * (httpserver.MAX_HEAD + 10),                  # no end yet
    b"GET / HTTP/1.1\r\nX: " + b"a" * (httpserver.MAX_HEAD + 10) + b"\r\n\r\n",    # whole, too big
])
def test_malformed_or_oversized_heads_get_400_and_a_closed_connection(tmp_path, request_bytes):
    data, lines = _serve(tmp_path, 0.0, lambda port: _exchange(port, request_bytes))
    assert data.startswith(b"HTTP/1.1 400 Bad Request\r\nServer: echo\r\nContent-Length: 0\r\n")
    assert data.endswith(b"Connection: close\r\n\r\n<EOF>")
    assert [f[3:6] + f[7:] for f in lines] == [["-", "-", "400", "none"]]


def test_a_client_that_leaves_during_the_delay_is_logged_499(tmp_path):
    async def talk(port):
        await _exchange(port, b"GET /gone HTTP/1.1\r\n\r\n", close_after=True)
        await asyncio.sleep(0.3)

    _, lines = _serve(tmp_path, 0.1, talk)
    assert [f[2:] for f in lines] == [[lines[0][2], "GET", "/gone", "499", "1", "none"]]
    assert float(lines[0][1]) - float(lines[0][0]) >= 0.099


def test_every_host_has_its_own_socket_on_the_shared_port(tmp_path):
    async def talk(port):
        return [await _exchange(port, b"GET /x HTTP/1.1\r\n\r\n", address) for address in ADDRESSES]

    answers, lines = _serve(tmp_path, 0.0, talk)
    assert [_responses(a)[0][0][1] for a in answers] == [b"0 GET /x ", b"1 GET /x "]
    assert [f[2].split(":")[0] for f in lines] == ADDRESSES
    assert lines[0][2].split(":")[1] == lines[1][2].split(":")[1]
