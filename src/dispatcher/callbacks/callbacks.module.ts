import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { CallbackDeliveryService } from './callback-delivery.service';
import { CallbackPoster } from './callback-poster';
import { ProgressForwarder } from './progress-forwarder';

@Module({
  imports: [TasksModule],
  providers: [CallbackPoster, CallbackDeliveryService, ProgressForwarder],
  exports: [ProgressForwarder],
})
export class CallbacksModule {}
