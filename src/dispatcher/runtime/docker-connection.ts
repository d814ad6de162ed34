import type { DockerOptions } from 'dockerode';

/**
 * How to reach the engine from DOCKER_HOST: `unix:///run/podman.sock`, a bare socket path,
 * `tcp://host:2375` (or `http://`/`https://`). Unset means the usual Docker socket.
 */
export function dockerConnection(dockerHost: string | null): DockerOptions {
  if (!dockerHost) return { socketPath: '/var/run/docker.sock' };
  if (dockerHost.startsWith('/')) return { socketPath: dockerHost };
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) || '/var/run/docker.sock' };
  const url = new URL(dockerHost);
  if (!['tcp:', 'http:', 'https:'].includes(url.protocol)) {
    throw new RangeError(`DOCKER_HOST must be unix://PATH, a socket path or tcp://HOST:PORT (got "${dockerHost}")`);
  }
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return { host: url.hostname, port: url.port || (protocol === 'https' ? 2376 : 2375), protocol };
}
