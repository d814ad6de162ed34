import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { isUUID, validate } from 'class-validator';
import { In, Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { fieldErrors } from '../../shared/errors/validation';
import { DispatchersService } from '../dispatchers/dispatchers.service';
import { callbackTokenMatches, verifyCallbackSignature } from './callback-signature';
import { decideCallback, finalStatusOfCallback, OPEN_STATUSES } from './task-state';
import { TaskCallbackDto, TaskProgressDto } from './tasks.dto';
import { Task, taskPatch, TaskStatus } from './tasks.entity';

/** A request from the dispatcher running one task, as the HTTP layer hands it over. */
export interface CallbackRequest {
  guid: string;
  authorization: string | undefined;
  signature: string | undefined;
  rawBody: Buffer | undefined;
  body: unknown;
}

export interface CallbackAnswer {
  status: 'ok';
  task_guid: string;
  task_status: TaskStatus;
  duplicate?: true;
}

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="task-callback"' };

/** The task callback and progress endpoints (CONTRACT "Task callback"). */
@Injectable()
export class TaskCallbacksService {
  private readonly logger = new Logger(TaskCallbacksService.name);

  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dispatchers: DispatchersService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async callback(request: CallbackRequest): Promise<CallbackAnswer> {
    const task = await this.authenticate(request, true);
    const body = await validBody(TaskCallbackDto, request.body);
    const reported = finalStatusOfCallback(body.status, body.result_metadata, task.cancelRequestedAt !== null);
    const decision = decideCallback(task.status, reported);
    if (decision.kind === 'duplicate') return { status: 'ok', task_guid: task.guid, task_status: task.status, duplicate: true };
    if (decision.kind === 'conflict') {
      throw DomainError.conflict(`The task is already ${task.status}; a ${reported} callback cannot change it.`, { status: task.status });
    }
    const applied = await this.tasks.update(
      { guid: task.guid, status: In([...OPEN_STATUSES]) },
      taskPatch({
        status: decision.to,
        exitCode: body.exit_code ?? null,
        resultKey: body.result_key || null,
        resultMetadata: body.result_metadata ?? null,
        errorMessage: body.error_message || null,
        finishedAt: new Date(),
      }),
    );
    if (applied.affected !== 1) {
      // Another callback or the watchdog closed the task meanwhile: judge against that.
      return this.callback(request);
    }
    if (task.dispatcherGuid) await this.dispatchers.adjustActiveTasks(task.dispatcherGuid, -1);
    this.logger.log({ task: task.guid, status: decision.to }, 'Task finished');
    return { status: 'ok', task_guid: task.guid, task_status: decision.to };
  }

  /** Keeps the latest progress; the first report moves a dispatched task to `running`. */
  async progress(request: CallbackRequest): Promise<CallbackAnswer> {
    const task = await this.authenticate(request, false);
    const body = await validBody(TaskProgressDto, request.body);
    const progress = {
      percentage: body.percentage ?? null,
      message: body.message ?? null,
      data: body.data ?? null,
      updated_at: new Date().toISOString(),
    };
    const started = await this.tasks.update({ guid: task.guid, status: In(['pending', 'dispatched']) }, taskPatch({ status: 'running', startedAt: new Date(), progress }));
    if (started.affected !== 1) {
      const updated = await this.tasks.update({ guid: task.guid, status: 'running' }, taskPatch({ progress }));
      if (updated.affected !== 1) {
        const current = await this.tasks.findOneByOrFail({ guid: task.guid });
        throw DomainError.conflict(`The task is already ${current.status}; progress is no longer kept.`, { status: current.status });
      }
    }
    return { status: 'ok', task_guid: task.guid, task_status: 'running' };
  }

  /**
   * Unknown task: 404. Bearer token not the task's: 401. With CALLBACK_SIGNING_KEY set, the
   * signature over the raw bytes is checked before the body is read: 403 when wrong. Progress
   * reports need the signature only when they carry one.
   */
  private async authenticate(request: CallbackRequest, signatureRequired: boolean): Promise<Task> {
    const task = isUUID(request.guid) ? await this.tasks.findOneBy({ guid: request.guid }) : null;
    if (!task) throw DomainError.notFound('Task');
    const token = bearerToken(request.authorization);
    if (!token) {
      throw new DomainError('not_authenticated', 'A Bearer callback token is required.', { headers: WWW_AUTHENTICATE });
    }
    if (!callbackTokenMatches(token, task.callbackTokenHash)) {
      throw new DomainError('authentication_failed', 'The callback token is not this task\'s.', { headers: WWW_AUTHENTICATE });
    }
    const key = this.config.callbackSigningKey;
    if (key && (signatureRequired || request.signature !== undefined)) {
      if (!verifyCallbackSignature(key, request.rawBody ?? Buffer.alloc(0), request.signature)) {
        throw new DomainError('invalid_signature', 'X-Service-Signature is missing or does not match the body.');
      }
    }
    return task;
  }
}

function bearerToken(authorization: string | undefined): string | null {
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}

async function validBody<T extends object>(type: ClassConstructor<T>, body: unknown): Promise<T> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw DomainError.invalid({ body: ['must be a JSON object'] });
  }
  const instance = plainToInstance(type, body);
  const errors = await validate(instance, { whitelist: true, forbidUnknownValues: false });
  if (errors.length > 0) throw DomainError.invalid(fieldErrors(errors));
  return instance;
}
