// Baseline (a): the HTTP ceiling. A bare node:http server that reads the body and answers 202.
import { createServer } from 'node:http';
import { serveIpc } from '../lib/ipc';

let n = 0;
const server = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    n++;
    const body = `{"event_id":"evt_${n}"}`;
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': String(body.length) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc({ count: () => n }, { port: typeof addr === 'object' && addr ? addr.port : 0 });
});
