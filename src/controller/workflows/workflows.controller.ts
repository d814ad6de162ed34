import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Answers, AnswersEmpty, Refuses } from '../../shared/http/openapi-decorators';
import { keysetRequest, Page, pageRequest } from '../../shared/http/page';
import { KeysetPageQueryDto, PageQueryDto } from '../../shared/http/page-query.dto';
import { OperatorOrScope } from '../auth/auth.decorators';
import { WorkflowRunsService } from './workflow-runs.service';
import { CreateWorkflowDto, WorkflowBodyDto } from './workflows.dto';
import { toWorkflowView, WorkflowsService, WorkflowView } from './workflows.service';
import { AuditResource } from '../audit/audit.decorators';

@ApiTags('workflows')
@AuditResource('workflow', { param: 'id', answer: 'id' })
@Controller('api/v1/workflows')
export class WorkflowsController {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly runs: WorkflowRunsService,
  ) {}

  @Get()
  @OperatorOrScope('workflows:read')
  @ApiOperation({ summary: 'List workflows' })
  @Answers(200, 'WorkflowPage', 'A page of workflows')
  list(@Query() query: PageQueryDto): Promise<Page<WorkflowView>> {
    return this.workflows.list(pageRequest(query));
  }

  @Post()
  @OperatorOrScope('workflows:write')
  @ApiOperation({ summary: 'Create a workflow: its triggers and its task template' })
  @Answers(201, 'Workflow', 'The workflow')
  @Refuses({ 409: 'conflict: a workflow with this id exists already' })
  create(@Body() body: CreateWorkflowDto): Promise<WorkflowView> {
    return this.workflows.create(body);
  }

  @Get(':id')
  @OperatorOrScope('workflows:read')
  @ApiOperation({ summary: 'One workflow' })
  @Answers(200, 'Workflow', 'The workflow')
  @Refuses({ 404: 'not_found: no such workflow' })
  async get(@Param('id') id: string): Promise<WorkflowView> {
    return toWorkflowView(await this.workflows.get(id));
  }

  @Put(':id')
  @OperatorOrScope('workflows:write')
  @ApiOperation({ summary: 'Replace a workflow' })
  @Answers(200, 'Workflow', 'The workflow as stored')
  @Refuses({ 404: 'not_found: no such workflow' })
  replace(@Param('id') id: string, @Body() body: WorkflowBodyDto): Promise<WorkflowView> {
    return this.workflows.replace(id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @OperatorOrScope('workflows:write')
  @ApiOperation({ summary: 'Delete a workflow' })
  @AnswersEmpty(204, 'Deleted')
  @Refuses({ 404: 'not_found: no such workflow' })
  async remove(@Param('id') id: string): Promise<void> {
    await this.workflows.remove(id);
  }

  @Get(':id/runs')
  @OperatorOrScope('workflows:read')
  @ApiOperation({ summary: 'The tasks a workflow created, newest first' })
  @Answers(200, 'TaskPage', 'A page of tasks')
  @Refuses({ 404: 'not_found: no such workflow' })
  listRuns(@Param('id') id: string, @Query() query: KeysetPageQueryDto) {
    return this.runs.list(id, keysetRequest(query));
  }
}
