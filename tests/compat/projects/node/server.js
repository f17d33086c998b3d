// A Node HTTP server on loopback and a client of it, in one process.
'use strict';
const http = require('http');
const fs = require('fs');
const os = require('os');
const path = require('path');

const srv = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(req.method + ' ' + req.url + ' ' + body);
  });
});

function get(port, p, data) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p,
      method: data ? 'POST' : 'GET' }, (res) => {
      let b = '';
      res.on('data', (c) => { b += c; });
      res.on('end', () => resolve(b));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

srv.listen(0, '127.0.0.1', async () => {
  const port = srv.address().port;
  try {
    const a = await get(port, '/a');
    const b = await get(port, '/b', 'xyz');
    if (a !== 'GET /a ' || b !== 'POST /b xyz') throw new Error(a + '|' + b);
    const f = path.join(os.tmpdir(), 'node-compat.txt');
    fs.writeFileSync(f, 'ok');
    if (fs.readFileSync(f, 'utf8') !== 'ok') throw new Error('fs');
    console.log('node ok');
    srv.close();
  } catch (e) {
    console.error(e);
    process.exit(1);
  }
});
setTimeout(() => { console.error('timed out'); process.exit(2); }, 20000).unref();
