// A bearer-adding reverse proxy for the conformance suite's server scenarios: the suite has no
// option to send a header, and a session endpoint wants the session's bearer token. A request
// to 127.0.0.1:PORT/TOKEN/PATH goes to TARGET/PATH with `Authorization: Bearer TOKEN` added
// (unless the client sent one), so scenarios running at once each reach their own fresh
// session. Bodies stream both ways (SSE too). Only the proxy's own Host and Origin are
// rewritten to the target's: any other value (dns-rebinding-protection's foreign Host or
// Origin) passes unchanged, so the host is what judges it.
//
// Usage: node proxy.mjs TARGET   (prints "proxy on PORT" once listening on a free port).
import http from 'node:http';

const target = new URL(process.argv[2]);
const proxy = http.createServer((req, res) => {
  const own = new Set([`127.0.0.1:${proxy.address().port}`, `localhost:${proxy.address().port}`]);
  const [, token, ...rest] = req.url.split('/');
  const headers = { ...req.headers };
  if (own.has(headers.host)) headers.host = target.host;
  if (headers.origin) {
    try {
      if (own.has(new URL(headers.origin).host)) headers.origin = target.origin;
    } catch {
      // Not a URL: passed on for the host to judge.
    }
  }
  if (!headers.authorization) headers.authorization = `Bearer ${token}`;
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: `/${rest.join('/')}`, headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502);
    res.end(String(e));
  });
  res.on('close', () => {
    if (!res.writableEnded) upstream.destroy();
  });
  req.pipe(upstream);
});
proxy.listen(0, '127.0.0.1', () => console.log(`proxy on ${proxy.address().port}`));
