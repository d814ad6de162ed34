import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { buildSync } from 'esbuild';

const AGENT_SOURCE = path.resolve(__dirname, 'agents/sdk-agent.ts');
const REPOSITORY = 'localhost/agent-examples/node-sdk';

/**
 * An image whose agent is a Node program using the agent SDK (agents/sdk-agent.ts), made here
 * as setup-podman.sh makes the shell images (no registry is reachable): a root file system
 * holding this machine's `node`, the shared libraries it links and the agent bundled into one
 * file, imported into the engine. Its tag is the hash of what went in, so an unchanged agent
 * is not imported twice. Answers the image's name.
 */
export async function nodeSdkAgentImage(docker: Docker): Promise<string> {
  const node = realpathSync(process.execPath);
  const bundle = buildSync({ entryPoints: [AGENT_SOURCE], bundle: true, platform: 'node', format: 'cjs', target: 'node20', write: false }).outputFiles[0].contents;
  const libraries = sharedLibraries(node);
  const tag = createHash('sha256').update(bundle).update(process.version).update(libraries.join('\n')).digest('hex').slice(0, 16);
  const image = `${REPOSITORY}:${tag}`;
  if (await docker.getImage(image).inspect().then(() => true, () => false)) return image;
  await removeOlderBuilds(docker);

  const rootfs = mkdtempSync(path.join(tmpdir(), 'node-sdk-rootfs-'));
  try {
    mkdirSync(path.join(rootfs, 'bin'));
    mkdirSync(path.join(rootfs, 'tmp'));
    chmodSync(path.join(rootfs, 'tmp'), 0o1777);
    copyFileSync(node, path.join(rootfs, 'bin/node'));
    for (const library of libraries) {
      mkdirSync(path.join(rootfs, path.dirname(library)), { recursive: true });
      copyFileSync(library, path.join(rootfs, library));
    }
    writeFileSync(path.join(rootfs, 'agent.cjs'), bundle);
    await importRootfs(docker, rootfs, image);
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  return image;
}

/** Builds of an earlier agent or Node (about 100 MB each), so they do not pile up in the engine. */
async function removeOlderBuilds(docker: Docker): Promise<void> {
  const images = await docker.listImages({ filters: { reference: [REPOSITORY] } });
  await Promise.all(images.map((found) => docker.getImage(found.Id).remove({ force: true }).catch(() => undefined)));
}

/** The shared objects `ldd` says the binary loads (the dynamic loader included). */
function sharedLibraries(binary: string): string[] {
  const listed = execFileSync('ldd', [binary], { encoding: 'utf8' });
  return [...listed.matchAll(/(\/\S+\.so[.\d]*)/g)].map((found) => found[1]).filter((file, i, all) => all.indexOf(file) === i);
}

/** `tar` of the folder, imported through the engine's API as an image that runs the agent, then tagged. */
async function importRootfs(docker: Docker, rootfs: string, image: string): Promise<void> {
  const tar = spawn('tar', ['-C', rootfs, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stream = await docker.importImage(tar.stdout, { changes: ['CMD ["/bin/node", "/agent.cjs"]', 'ENV PATH=/bin'] } as object);
  const progress = await new Promise<{ id?: string; status?: string }[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (error: Error | null, output: { id?: string; status?: string }[]) => (error ? reject(error) : resolve(output))));
  const imported = progress.at(-1)?.id ?? progress.at(-1)?.status;
  if (!imported?.startsWith('sha256:')) throw new Error(`the engine did not import the agent image: ${JSON.stringify(progress)}`);
  const separator = image.lastIndexOf(':');
  await docker.getImage(imported).tag({ repo: image.slice(0, separator), tag: image.slice(separator + 1) });
}
