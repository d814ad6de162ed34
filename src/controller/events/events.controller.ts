import { Controller, Get, Headers, Query, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnswersWith, Refuses } from '../../shared/http/openapi-decorators';
import type { Response } from 'express';
import { DomainError } from '../../shared/errors/domain-error';
import { streamText } from '../../shared/http/stream-text';
import { OperatorOrScope } from '../auth/auth.decorators';
import { EventsQueryDto } from './events.dto';
import { EventsService } from './events.service';

@ApiTags('events')
@Controller('api/v1/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperation({
    summary: 'Live events (text/event-stream): task.created, task.status, task.progress, task.finished, dispatcher.state; '
      + 'each has an id, and Last-Event-ID resumes within EVENT_RETENTION_HOURS',
  })
  @AnswersWith(200, 'text/event-stream', 'Server-sent events until the client disconnects: task.created, task.status, task.progress, task.finished, dispatcher.state')
  @Refuses({ 400: 'invalid: a query parameter is out of range' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event id' })
  @OperatorOrScope('tasks:read')
  stream(@Query() query: EventsQueryDto, @Headers('last-event-id') lastEventId: string | undefined, @Res() response: Response): Promise<void> {
    const after = lastEventId !== undefined && lastEventId !== '' ? parseEventId(lastEventId) : query.last_event_id;
    return streamText(response, this.events.stream({ after, taskGuid: query.task_guid }), 'text/event-stream; charset=utf-8');
  }
}

function parseEventId(value: string): number {
  if (!/^\d{1,15}$/.test(value.trim())) throw DomainError.invalid({ 'Last-Event-ID': ['must be an event id from this stream'] });
  return Number(value.trim());
}
