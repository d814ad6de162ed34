// Container HEALTHCHECK: GET /livez (the process answers; no dependency checked) of the role(s) this container runs, on loopback.
// Exits 0 when every answer is 200, else 1. Plain CommonJS so it runs without a build.
const http = require('node:http');

const role = process.env.ROLE || 'all';
const targets = [];
if (role === 'controller' || role === 'all') targets.push({ port: process.env.CONTROLLER_PORT || '8000', path: '/livez' });
if (role === 'dispatcher' || role === 'all') targets.push({ port: process.env.DISPATCHER_PORT || '8080', path: '/livez' });

function check({ port, path }) {
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port: Number(port), path, timeout: 4000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

Promise.all(targets.map(check)).then((results) => process.exit(results.length > 0 && results.every(Boolean) ? 0 : 1));
