import { AuditEntry } from './audit/audit.entity';
import { OperatorToken } from './auth/operator-token.entity';
import { Dispatcher } from './dispatchers/dispatchers.entity';
import { TaskEvent } from './events/events.entity';
import { OAuthAccessToken } from './oauth/oauth-access-token.entity';
import { OAuthClient } from './oauth/oauth-client.entity';
import { ScheduleTick } from './schedules/schedule-tick.entity';
import { QueueClock } from './scheduling/queue-clock.entity';
import { TaskAttempt } from './scheduling/task-attempt.entity';
import { Skill, SkillVersion } from './skills/skills.entity';
import { Subscription, SubscriptionDelivery } from './subscriptions/subscriptions.entity';
import { Task } from './tasks/tasks.entity';
import { WebhookDelivery } from './webhooks/webhook-delivery.entity';
import { Workflow } from './workflows/workflows.entity';

/** Every controller entity; the controller's data source loads exactly these. */
export const CONTROLLER_ENTITIES: Function[] = [
  OperatorToken,
  OAuthClient,
  OAuthAccessToken,
  Dispatcher,
  Task,
  Skill,
  SkillVersion,
  Workflow,
  WebhookDelivery,
  TaskEvent,
  ScheduleTick,
  QueueClock,
  TaskAttempt,
  Subscription,
  SubscriptionDelivery,
  AuditEntry,
];
