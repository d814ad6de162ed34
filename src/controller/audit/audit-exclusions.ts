/**
 * The controller's state-changing operations (OpenAPI operation ids) that leave no audit
 * row, and why. Every other non-GET operation that takes an operator or OAuth client
 * credential is recorded; test/e2e/audit-coverage.e2e-spec.ts calls every non-GET operation
 * of the document and fails on one that is neither recorded nor listed here.
 */
export const AUDIT_EXCLUSIONS: Readonly<Record<string, string>> = {
  webhooks_ingest: 'an inbound webhook: its sender proves itself with a signature, not an operator or client credential; every delivery is kept in the webhook ledger',
  tasks_callback: "the dispatcher running the task reports its end with the task's callback token; the task itself keeps the outcome",
  tasks_progress: "the dispatcher forwards its agent's progress with the task's callback token, up to once a second per task",
  oauth_token: 'a client exchanging its own secret for an access token: nothing an operator manages changes, and failures are throttled per address',
  dispatchers_heartbeat: "a dispatcher's liveness signal, every few seconds per dispatcher; its state shows in the dispatcher view",
};
