import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { dockerConnection } from '../../src/dispatcher/runtime/docker-connection';

/** The image scripts/setup-podman.sh builds: a busybox shell agent speaking the agent protocol. */
export const SHELL_AGENT_IMAGE = 'localhost/agent-examples/shell-echo:latest';
/** Its sibling that installs the task's skills (scripts/agent-images/shell-skills). */
export const SKILLS_AGENT_IMAGE = 'localhost/agent-examples/shell-skills:latest';
/** The shell agent as a warm pool runs it: it claims its task first (scripts/agent-images/shell-warm). */
export const WARM_AGENT_IMAGE = 'localhost/agent-examples/shell-warm:latest';
export const DEFAULT_DOCKER_HOST = 'unix:///tmp/atc-podman/podman.sock';

/**
 * The container engine the docker-engine specs run against: DOCKER_HOST (set by .ci/run
 * from scripts/setup-podman.sh), else the socket that script uses by default. When it
 * does not answer, or lacks the agent image, the spec fails saying how to fix it; these
 * specs never skip.
 */
export async function requireContainerEngine(): Promise<{ dockerHost: string; docker: Docker }> {
  const dockerHost = process.env.DOCKER_HOST?.trim() || DEFAULT_DOCKER_HOST;
  const docker = new Docker(dockerConnection(dockerHost));
  const fix = 'Run `export DOCKER_HOST="$(scripts/setup-podman.sh)"` first (it installs Podman when missing, builds the agent image and starts the service).';
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`No container engine answers at DOCKER_HOST=${dockerHost} (${(error as Error).message}). ${fix}`);
  }
  for (const image of [SHELL_AGENT_IMAGE, SKILLS_AGENT_IMAGE]) {
    try {
      await docker.getImage(image).inspect();
    } catch {
      throw new Error(`The container engine at ${dockerHost} lacks the image ${image}. ${fix}`);
    }
  }
  return { dockerHost, docker };
}

/** Removes every container a test dispatcher left behind (by its managed-by label). */
export async function removeManagedContainers(docker: Docker, dispatcherName: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: [`app.kubernetes.io/managed-by=${dispatcherName}`] } });
  await Promise.all(containers.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
}

/** A stand-in dispatcher that accepts every agent call, so the backend can be seen alone. */
export async function agentProtocolServer(): Promise<{ url: string; server: Server; calls: string[] }> {
  const calls: string[] = [];
  const server = createServer((request, response) => {
    request.resume().on('end', () => {
      calls.push(`${request.method} ${request.url}`);
      response.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      response.end(JSON.stringify({ ok: true, data: { brief_key: null, env: {} } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, calls };
}
