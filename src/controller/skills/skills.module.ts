import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TemporaryPackageSweeper } from './package-upload';
import { SkillBlobs } from './skill-blobs';
import { SkillsController } from './skills.controller';
import { Skill, SkillVersion } from './skills.entity';
import { SkillsService } from './skills.service';

/** The skills registry; `SkillsService.resolveRef` is for features that hand skills to tasks. */
@Module({
  imports: [TypeOrmModule.forFeature([Skill, SkillVersion])],
  controllers: [SkillsController],
  providers: [SkillsService, SkillBlobs, TemporaryPackageSweeper],
  exports: [SkillsService],
})
export class SkillsModule {}
