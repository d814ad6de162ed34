import { DomainError } from '../shared/errors/domain-error';
import { OperatorToken } from '../controller/auth/operator-token.entity';
import { OperatorTokensService } from '../controller/auth/operator-tokens.service';

export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export type TokenCommand =
  | { action: 'create'; name: string }
  | { action: 'list'; json: boolean }
  | { action: 'revoke'; target: string };

/** Records a change the CLI made in the audit trail (the HTTP API records its own). */
export type TokenAudit = (action: 'create' | 'revoke', token: OperatorToken) => Promise<void>;

/** Runs a token command: operator tokens for `Authorization: Token <token>`. */
export async function runTokenCommand(command: TokenCommand, tokens: OperatorTokensService, output: Output, audit: TokenAudit): Promise<void> {
  switch (command.action) {
    case 'create': {
      const { token, record } = await tokens.create(command.name);
      await audit('create', record);
      output.err(`Created operator token "${record.name}" (id ${record.id}). It is shown only this once; keep it secret:`);
      output.out(token);
      return;
    }
    case 'list': {
      const records = await tokens.list();
      output.out(command.json ? JSON.stringify(records.map(view), null, 2) : table(records));
      return;
    }
    case 'revoke': {
      const record = await tokens.revoke(command.target);
      await audit('revoke', record);
      output.out(`Revoked operator token "${record.name}" (id ${record.id}).`);
      return;
    }
  }
}

function view(record: OperatorToken) {
  return {
    id: record.id,
    name: record.name,
    created_at: record.createdAt.toISOString(),
    last_used_at: record.lastUsedAt?.toISOString() ?? null,
    revoked: record.revokedAt !== null,
    revoked_at: record.revokedAt?.toISOString() ?? null,
  };
}

function table(records: OperatorToken[]): string {
  if (records.length === 0) return 'No operator tokens (API_TOKEN from the configuration always works).';
  const rows = records.map((record) => {
    const item = view(record);
    return [item.id, item.name, item.created_at, item.last_used_at ?? 'never', item.revoked ? `revoked ${item.revoked_at}` : 'active'];
  });
  const header = ['ID', 'NAME', 'CREATED', 'LAST USED', 'STATUS'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function isCommandError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}
