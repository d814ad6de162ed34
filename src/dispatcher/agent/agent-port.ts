import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '../../shared/config/config';
import { applyServerLimits } from '../../shared/http/server-limits';

const VIA_AGENT_PORT = Symbol('viaAgentPort');
type AgentPortRequest = IncomingMessage & { [VIA_AGENT_PORT]?: true };

/** `/agent/...` (the agent protocol), the only paths an agent port answers. */
export function isAgentPath(url: string | undefined): boolean {
  return /^\/agent(\/|\?|$)/.test(url ?? '');
}

function notFound(response: ServerResponse): void {
  response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify({ ok: false, error: { code: 'not_found', message: 'Only the agent API (/agent/*) is served on this port.', details: {} } }));
}

/**
 * Serves the dispatcher's agent API alone on AGENT_PORT: the same application, reached
 * through a server that hands it `/agent/*` requests and answers 404 to anything else, so an
 * agent never reaches the task API, `/metrics` or the docs.
 */
export async function listenOnAgentPort(app: INestApplication, config: AppConfig): Promise<Server> {
  const handle = app.getHttpAdapter().getInstance() as (request: IncomingMessage, response: ServerResponse) => void;
  const server = createServer((request: AgentPortRequest, response) => {
    if (!isAgentPath(request.url)) return notFound(response);
    request[VIA_AGENT_PORT] = true;
    handle(request, response);
  });
  applyServerLimits(server, config.httpServer);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.agentPort!, config.host, () => resolve());
  });
  return server;
}

/**
 * On DISPATCHER_PORT, `/agent/*` answers 404 once AGENT_API_ON_MAIN_PORT=false, so agents can
 * be held to their own port (and a network policy to it).
 */
export function agentPathsOnMainPort(config: AppConfig) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const refused = config.agentPort !== null && !config.agentApiOnMainPort && isAgentPath(request.url) && !(request as AgentPortRequest)[VIA_AGENT_PORT];
    if (refused) return notFound(response);
    next();
  };
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
