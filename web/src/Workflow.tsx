import { useEffect, useState } from 'react';
import { Alert, Button, Input, Progress, Space, Steps, Tag } from 'antd';
import Markdown from 'react-markdown';
import { api, unwrap } from './lib/api';
import { follow } from './lib/realtime';
import { stepStatus, useI18n } from './lib/i18n';

/** A workflow step as the events carry it (shopmind.chat.v1.WorkflowStep). */
interface Step {
  id?: string;
  agent?: string;
  description?: string;
  status?: string;
  summary?: string;
  error?: string;
}
interface WorkflowEvent {
  type: string;
  status: string;
  progress?: number;
  step?: Step | null;
  delta?: string;
  error?: string;
}

/** Workflow starts a v1 workflow in the conversation and follows it on the WebSocket channel. */
export function Workflow({ conversationId }: { conversationId: string }) {
  const { t } = useI18n();
  const [task, setTask] = useState('');
  const [wid, setWid] = useState('');
  const [status, setStatus] = useState('');
  const [progress, setProgress] = useState(0);
  const [steps, setSteps] = useState<Record<string, Step>>({});
  const [text, setText] = useState('');
  const [conn, setConn] = useState('');
  const [error, setError] = useState('');

  useEffect(() => {
    if (!wid) return;
    return follow(`workflow:${wid}`, {
      onEvent: (d) => {
        const e = d as WorkflowEvent;
        setStatus(e.status);
        if (typeof e.progress === 'number') setProgress(e.progress);
        // a step event carries the whole step: it replaces the step of the same id in place
        if (e.step) setSteps((s) => ({ ...s, [e.step!.id || e.step!.description || String(Object.keys(s).length)]: e.step! }));
        if (e.type === 'text' && e.delta) setText((x) => x + e.delta);
        if (e.type === 'error' && e.error) setError(e.error);
      },
      onState: (s, detail) => {
        setConn(s);
        if (s === 'failed' && detail) setError(detail);
      },
    });
  }, [wid]);

  const start = async () => {
    setError('');
    setText('');
    setSteps({});
    setProgress(0);
    try {
      const d = unwrap(await api.POST('/api/v1/chat/workflows', { body: { task_description: task.trim(), conversation_id: conversationId } }));
      setWid(d.workflow_id ?? '');
      setStatus(d.status ?? 'pending');
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <div data-testid="workflow">
      <Space.Compact style={{ width: '100%' }}>
        <Input aria-label={t('workflow')} value={task} onChange={(e) => setTask(e.target.value)} placeholder={t('askPlaceholder')} />
        <Button onClick={() => void start()} disabled={!task.trim() || (!!wid && !['completed', 'failed', 'cancelled'].includes(status))}>
          {t('run')}
        </Button>
      </Space.Compact>
      {wid && (
        <div style={{ marginTop: 8 }} aria-label={t('workflowProgress')}>
          <Space>
            <Tag data-testid="workflow-status" data-status={status}>
              {stepStatus(t, status)}
            </Tag>
            {conn === 'reconnecting' && <Tag color="orange">{t('reconnecting')}</Tag>}
          </Space>
          <Progress percent={progress} size="small" aria-label={t('workflowProgress')} />
          <Steps
            size="small"
            direction="vertical"
            data-testid="workflow-steps"
            items={Object.values(steps).map((s) => ({
              title: s.description || s.id,
              description: s.error || s.summary || s.agent,
              status: s.status === 'completed' ? 'finish' : s.status === 'running' ? 'process' : s.status === 'failed' || s.status === 'cancelled' ? 'error' : 'wait',
            }))}
          />
          {text && <Markdown>{text}</Markdown>}
        </div>
      )}
      {error && <Alert type="error" showIcon message={error} style={{ marginTop: 8 }} />}
    </div>
  );
}
