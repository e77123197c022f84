"""A TLS-terminating proxy for the TLS test: accepts TLS (HTTP/2 by ALPN,
with a client certificate signed by CA when one is given) on a free loopback
port, prints the port, and pipes the plaintext to 127.0.0.1:UPSTREAM.

    python3 proxy.py CERT KEY CA|- UPSTREAM
"""
import asyncio
import ssl
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def main():
    cert, key, ca, upstream = sys.argv[1:5]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    if ca != "-":
        context.load_verify_locations(ca)
        context.verify_mode = ssl.CERT_REQUIRED

    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", int(upstream))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
