import { pipeline } from 'node:stream/promises';
import { Body, Controller, Get, Headers, Logger, Param, Post, Query, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Answers, AnswersEmpty, AnswersWith, Refuses } from '../../shared/http/openapi-decorators';
import type { Response } from 'express';
import { OperatorOrScope } from '../auth/auth.decorators';
import { PackageUploadInterceptor, ReceivedPackage, UploadedPackage } from './package-upload';
import { CreateSkillDto, DownloadQuery, ListSkillsQuery, SkillView, SkillVersionView, UploadResultView } from './skills.dto';
import { SkillsService } from './skills.service';
import { AuditResource } from '../audit/audit.decorators';

/** Skills and their versioned zip packages (CONTRACT "Skills"). */
@ApiTags('skills')
@AuditResource('skill', { param: 'slug', answer: 'slug' })
@Controller('api/v1/skills')
export class SkillsController {
  private readonly logger = new Logger(SkillsController.name);

  constructor(private readonly skills: SkillsService) {}

  @Get()
  @OperatorOrScope('skills:read')
  @ApiOperation({ summary: 'List skills (a JSON array), optionally by category or a search text' })
  @Answers(200, { type: 'array', items: { $ref: '#/components/schemas/Skill' } }, 'The skills')
  list(@Query() query: ListSkillsQuery): Promise<SkillView[]> {
    return this.skills.list(query);
  }

  @Post()
  @OperatorOrScope('skills:write')
  @ApiOperation({ summary: 'Create a skill; its slug is made from the name' })
  @Answers(201, 'Skill', 'The skill')
  @Refuses({ 409: 'conflict: the slug is taken' })
  create(@Body() body: CreateSkillDto): Promise<SkillView> {
    return this.skills.create(body);
  }

  @Get(':slug')
  @OperatorOrScope('skills:read')
  @ApiOperation({ summary: 'A skill with its versions' })
  @Answers(200, 'SkillDetail', 'The skill and its versions')
  @Refuses({ 404: 'not_found: no such skill' })
  get(@Param('slug') slug: string): Promise<SkillView & { versions: SkillVersionView[] }> {
    return this.skills.get(slug);
  }

  @Post(':slug/upload')
  @OperatorOrScope('skills:write')
  @UseInterceptors(PackageUploadInterceptor)
  @ApiConsumes('multipart/form-data')
  @ApiBody({ schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } })
  @ApiOperation({ summary: 'Upload a zip package: 201 a new version, 200 when the same bytes are already a version' })
  @Answers(201, 'SkillUpload', 'A new version')
  @Answers(200, 'SkillUpload', 'The same bytes are already a version of this skill (deduplicated: true)')
  @Refuses({ 404: 'not_found: no such skill' })
  async upload(
    @Param('slug') slug: string,
    @UploadedPackage() received: ReceivedPackage,
    @Res({ passthrough: true }) response: Response,
  ): Promise<UploadResultView> {
    const result = await this.skills.upload(slug, received);
    response.status(result.deduplicated ? 200 : 201);
    return result;
  }

  @Get(':slug/download')
  @OperatorOrScope('skills:read')
  @ApiOperation({ summary: 'Download the latest package, or ?version=N; If-None-Match answers 304' })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of a copy held; the same version answers 304' })
  @AnswersWith(200, 'application/zip', 'The package', {
    ETag: { description: '"<content hash>"', schema: { type: 'string' } },
    'X-Content-Hash': { description: 'SHA-256 of the package, hex', schema: { type: 'string' } },
    'Content-Disposition': { description: 'attachment; filename="<slug>-<N>.zip"', schema: { type: 'string' } },
  })
  @AnswersEmpty(304, 'Not modified: the If-None-Match ETag is this version', { ETag: { description: '"<content hash>"', schema: { type: 'string' } } })
  @Refuses({ 404: 'not_found: no such skill or version' })
  async download(
    @Param('slug') slug: string,
    @Query() query: DownloadQuery,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const download = await this.skills.download(slug, query.version, ifNoneMatch);
    const { content_hash: contentHash, size_bytes: size, version_number: number } = download.version;
    response.setHeader('ETag', `"${contentHash}"`);
    response.setHeader('X-Content-Hash', contentHash);
    if (download.notModified || !download.body) {
      response.status(304).end();
      return;
    }
    response.status(200);
    response.setHeader('Content-Type', 'application/zip');
    response.setHeader('Content-Length', String(size));
    response.setHeader('Content-Disposition', `attachment; filename="${download.slug}-${number}.zip"`);
    await pipeline(download.body, response).catch((error: unknown) => {
      this.logger.warn({ slug, version: number, err: error }, 'Package download ended early');
    });
  }
}
