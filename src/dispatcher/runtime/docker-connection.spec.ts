import { dockerConnection } from './docker-connection';

describe('DOCKER_HOST', () => {
  it.each([
    [null, { socketPath: '/var/run/docker.sock' }],
    ['unix:///tmp/atc-podman/podman.sock', { socketPath: '/tmp/atc-podman/podman.sock' }],
    ['/run/podman/podman.sock', { socketPath: '/run/podman/podman.sock' }],
    ['tcp://10.0.0.5:2375', { host: '10.0.0.5', port: '2375', protocol: 'http' }],
    ['https://docker.internal', { host: 'docker.internal', port: 2376, protocol: 'https' }],
  ])('%s', (value, expected) => {
    expect(dockerConnection(value)).toEqual(expected);
  });

  it('refuses other schemes with a message naming the setting', () => {
    expect(() => dockerConnection('ssh://me@host')).toThrow(/DOCKER_HOST must be/);
  });
});
