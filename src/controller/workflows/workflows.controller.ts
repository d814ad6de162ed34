import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { keysetRequest, Page, pageRequest } from '../../shared/http/page';
import { KeysetPageQueryDto, PageQueryDto } from '../../shared/http/page-query.dto';
import { OperatorOrScope } from '../auth/auth.decorators';
import { WorkflowRunsService } from './workflow-runs.service';
import { CreateWorkflowDto, WorkflowBodyDto } from './workflows.dto';
import { toWorkflowView, WorkflowsService, WorkflowView } from './workflows.service';

@ApiTags('workflows')
@Controller('api/v1/workflows')
export class WorkflowsController {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly runs: WorkflowRunsService,
  ) {}

  @Get()
  @OperatorOrScope('workflows:read')
  list(@Query() query: PageQueryDto): Promise<Page<WorkflowView>> {
    return this.workflows.list(pageRequest(query));
  }

  @Post()
  @OperatorOrScope('workflows:write')
  create(@Body() body: CreateWorkflowDto): Promise<WorkflowView> {
    return this.workflows.create(body);
  }

  @Get(':id')
  @OperatorOrScope('workflows:read')
  async get(@Param('id') id: string): Promise<WorkflowView> {
    return toWorkflowView(await this.workflows.get(id));
  }

  @Put(':id')
  @OperatorOrScope('workflows:write')
  replace(@Param('id') id: string, @Body() body: WorkflowBodyDto): Promise<WorkflowView> {
    return this.workflows.replace(id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @OperatorOrScope('workflows:write')
  async remove(@Param('id') id: string): Promise<void> {
    await this.workflows.remove(id);
  }

  @Get(':id/runs')
  @OperatorOrScope('workflows:read')
  listRuns(@Param('id') id: string, @Query() query: KeysetPageQueryDto) {
    return this.runs.list(id, keysetRequest(query));
  }
}
