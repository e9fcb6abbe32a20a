#!/usr/bin/env python3
"""delayproxy.py LISTEN_PORT UPSTREAM_PORT RTT_MS COUNT_FILE

A TCP proxy on 127.0.0.1 that adds RTT_MS of round trip to every
connection (half each way: each piece of data is sent on half the RTT after
it arrived, so that throughput is not cut, only latency added) and counts
the HTTP requests clients send through it (request lines at the start of a
request), writing the running count to COUNT_FILE, and the bytes the store
sent back (headers and bodies) to COUNT_FILE.bytes.  The kernel here has no
netem; the bench puts this between every client and the store alike."""
import asyncio
import re
import sys
import time

listen, upstream, rtt, count_file = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
half = rtt / 2000.0
requests = 0
answered = 0
REQ = re.compile(rb'(?:^|\r\n\r\n)(GET|HEAD|PUT|POST|DELETE) \S+ HTTP/1\.[01]\r\n')


def counted(data):
    global requests
    n = len(REQ.findall(data))
    if n:
        requests += n
        with open(count_file, 'w') as f:
            f.write('%d\n' % requests)


def answered_bytes(n):
    global answered
    answered += n
    with open(count_file + '.bytes', 'w') as f:
        f.write('%d\n' % answered)


async def pump(reader, writer, count):
    queue = asyncio.Queue()

    async def sender():
        while True:
            at, data = await queue.get()
            if data is None:
                break
            wait = at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(sender())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            if count:
                counted(data)
            else:
                answered_bytes(len(data))
            queue.put_nowait((time.monotonic() + half, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def handle(creader, cwriter):
    try:
        sreader, swriter = await asyncio.open_connection('127.0.0.1', upstream)
    except OSError:
        cwriter.close()
        return
    await asyncio.gather(pump(creader, swriter, True), pump(sreader, cwriter, False))


async def main():
    with open(count_file, 'w') as f:
        f.write('0\n')
    with open(count_file + '.bytes', 'w') as f:
        f.write('0\n')
    server = await asyncio.start_server(handle, '127.0.0.1', listen)
    async with server:
        await server.serve_forever()

asyncio.run(main())
