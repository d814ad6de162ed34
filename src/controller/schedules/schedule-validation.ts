import { ValidateBy, ValidationOptions } from 'class-validator';
import { cronProblem, SCHEDULE_SOURCE, timeZoneProblem } from './schedule-trigger';

/** Checks of a workflow trigger's schedule fields, as class-validator decorators on TriggerDto. */

export const isScheduleSource = (trigger: object): boolean => (trigger as { source?: unknown }).source === SCHEDULE_SOURCE;

export function IsCronPattern(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isCronPattern',
      validator: {
        validate: (cron: unknown) => cronProblem(cron) === null,
        defaultMessage: (args) => `cron ${cronProblem(args?.value) ?? 'is not a cron pattern'}`,
      },
    },
    options,
  );
}

export function IsTimeZone(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTimeZone',
      validator: {
        validate: (timezone: unknown) => timeZoneProblem(timezone) === null,
        defaultMessage: (args) => `timezone ${timeZoneProblem(args?.value) ?? 'is not a time zone'}`,
      },
    },
    options,
  );
}

/**
 * A field that only one kind of trigger takes: `forSchedule` fields (cron, timezone,
 * catch_up) only a schedule trigger, the others (event, filter) only a webhook trigger.
 */
export function OnlyForTriggerKind(field: string, forSchedule: boolean, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: forSchedule ? 'onlyForSchedule' : 'notForSchedule',
      validator: {
        validate: (value: unknown, args) => value === undefined || isScheduleSource(args?.object ?? {}) === forSchedule,
        defaultMessage: () => (forSchedule ? `${field} is only for a trigger with source "schedule"` : `a schedule trigger takes no ${field}`),
      },
    },
    options,
  );
}
