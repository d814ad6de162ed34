import type { Server } from 'node:http';
import type { HttpServerSettings } from '../config/config';

/**
 * Node's defaults close an idle keep-alive connection after 5 s, before a load balancer
 * (60 s) does, so it sends requests into closed sockets; the settings put it above them,
 * and cap connections so a flood of streams runs out of sockets here before memory.
 */
export function applyServerLimits(server: Server, settings: HttpServerSettings): void {
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  server.headersTimeout = settings.headersTimeoutMs;
  // Time to receive a whole request; a response (an event stream) may last as long as it likes.
  server.requestTimeout = settings.requestTimeoutMs;
  server.maxConnections = settings.maxConnections;
}
