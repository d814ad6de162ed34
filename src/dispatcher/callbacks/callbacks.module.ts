import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { CallbackDeliveryService, DeliverWhenOutputStored } from './callback-delivery.service';
import { CallbackPoster } from './callback-poster';
import { ProgressForwarder } from './progress-forwarder';

@Module({
  imports: [TasksModule],
  providers: [CallbackPoster, CallbackDeliveryService, DeliverWhenOutputStored, ProgressForwarder],
  exports: [ProgressForwarder],
})
export class CallbacksModule {}
