import { Module } from '@nestjs/common';
import { EventFanout } from './event-fanout';
import { EventFeed } from './event-feed';
import { EventsController } from './events.controller';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

@Module({
  controllers: [EventsController],
  providers: [EventFeed, EventFanout, EventsRepository, EventsService],
  exports: [EventFeed, EventsRepository],
})
export class EventsModule {}
