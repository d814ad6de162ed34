import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { RegistrationService } from './registration.service';

@Module({
  imports: [TasksModule],
  providers: [RegistrationService],
})
export class RegistrationModule {}
