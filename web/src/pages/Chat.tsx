import { startTransition, useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from 'react';
import { Alert, Button, Card, Collapse, Empty, Input, Modal, Space, Steps, Tag, Typography } from 'antd';
import { Conversations, Prompts, Sender } from '@ant-design/x';
import { DeleteOutlined, EditOutlined, PlusOutlined } from '@ant-design/icons';
import Markdown from 'react-markdown';
import { useNavigate, useParams } from 'react-router-dom';
import { api, authHeaders, unwrap, ApiError, type Schemas } from '../lib/api';
import { emptyReply, firstTokenCommitted, hasText, readStream, reduce, type Action, type Render, type Reply } from '../lib/stream';
import { stepStatus, useI18n } from '../lib/i18n';
import { ChartView } from '../Chart';
import { Workflow } from '../Workflow';

type SessionRow = Schemas['shopmind.chat.v1.Session'];
type Turn = { role: 'user'; text: string } | { role: 'assistant'; reply: Reply };

/** replyFromHistory turns a stored assistant message (content_json holds its renders and charts) into a Reply. */
function replyFromHistory(m: Schemas['shopmind.chat.v1.Message']): Reply {
  let r = emptyReply();
  const j = (m.content_json ?? {}) as { renders?: Render[]; visualizations?: { id: string; chart_type: string; title: string; columns: string[]; rows: unknown[][] }[] };
  for (const x of j.renders ?? []) r = reduce(r, { type: 'event', event: { type: 'render', id: x.id, component: x.component, props: x.props } });
  r = reduce(r, { type: 'event', event: { object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: m.content ?? '' } }] } });
  for (const v of j.visualizations ?? []) r = reduce(r, { type: 'event', event: { type: 'visualization', ...v } as never });
  return { ...r, finished: true };
}

function ThinkingBlock({ render, answering }: { render: Render; answering: boolean }) {
  const { t } = useI18n();
  const [manual, setManual] = useState<boolean | null>(null);
  const open = manual ?? !answering; // folds when the answer starts, unless the user chose
  const p = render.props as { title?: string; status?: string; steps?: { title: string; detail?: string; status: string }[] };
  const running = p.status === 'running';
  return (
    <Collapse
      size="small"
      data-testid="thinking"
      activeKey={open ? ['t'] : []}
      onChange={(k) => setManual((Array.isArray(k) ? k : [k]).includes('t'))}
      items={[
        {
          key: 't',
          label: (
            <Space>
              {running ? t('thinking') : t('thoughtDone')}
              {p.title && <Typography.Text type="secondary">{p.title}</Typography.Text>}
            </Space>
          ),
          children: (
            <ul style={{ margin: 0, paddingLeft: 18 }}>
              {(p.steps ?? []).map((s, i) => (
                <li key={i}>
                  <Tag color={s.status === 'done' ? 'green' : s.status === 'error' ? 'red' : 'blue'}>{stepStatus(t, s.status)}</Tag>
                  {s.title}
                  {s.detail && <Typography.Text type="secondary"> · {s.detail}</Typography.Text>}
                </li>
              ))}
            </ul>
          ),
        },
      ]}
    />
  );
}

function PlanCard({ render }: { render: Render }) {
  const { t } = useI18n();
  const p = render.props as { title?: string; tasks?: { id?: string; title: string; status: string }[]; subtasks?: { id?: string; title: string; status: string }[] };
  const tasks = p.tasks ?? p.subtasks ?? [];
  const status = (s: string) => (s === 'done' || s === 'completed' ? 'finish' : s === 'running' ? 'process' : s === 'error' || s === 'failed' ? 'error' : 'wait') as 'finish' | 'process' | 'error' | 'wait';
  return (
    <Card size="small" title={p.title || t('plan')} data-testid="plan-card">
      <Steps size="small" direction="vertical" items={tasks.map((x) => ({ title: x.title, status: status(x.status), description: stepStatus(t, x.status) }))} />
    </Card>
  );
}

// The live answer's paragraphs carry an Element Timing identifier: the browser reports when
// their text is first painted (PerformanceObserver, type "element"), which the browser tests
// compare with the firstTokenReceived mark.
const timed = { p: ({ node: _n, ...props }: React.ComponentProps<'p'> & { node?: unknown }) => <p {...props} {...{ elementtiming: 'shopmind-answer' }} /> };

/** Answer draws the answer's Markdown; on a live reply it marks firstTokenCommitted the first time it holds text. */
function Answer({ text, live }: { text: string; live: boolean }) {
  const marked = useRef(false);
  useLayoutEffect(() => {
    if (!live || marked.current || !text) return;
    marked.current = true;
    performance.mark(firstTokenCommitted);
  }, [text, live]);
  return (
    <div className="md" data-testid="answer">
      <Markdown components={live ? timed : undefined}>{text}</Markdown>
    </div>
  );
}

function ReplyView({ reply, onRetry, live = false }: { reply: Reply; onRetry?: () => void; live?: boolean }) {
  const { t } = useI18n();
  return (
    <div data-testid="reply" style={{ display: 'grid', gap: 8 }}>
      {reply.parts.map((part, i) => {
        if (part.kind === 'text') return <Answer key="text" text={reply.text} live={live} />;
        if (part.kind === 'visualization') return <ChartView key={part.id} data={reply.visualizations[part.id]} />;
        const r = reply.renders[part.id];
        if (r.component === 'ThinkingProcess') return <ThinkingBlock key={part.id} render={r} answering={reply.answering} />;
        if (r.component === 'TaskPlanCard') return <PlanCard key={part.id} render={r} />;
        return (
          <Card key={part.id + i} size="small" title={r.component}>
            <pre style={{ margin: 0, whiteSpace: 'pre-wrap' }}>{JSON.stringify(r.props, null, 2)}</pre>
          </Card>
        );
      })}
      {reply.error && (
        <Alert
          type="error"
          role="alert"
          showIcon
          message={reply.error.message}
          action={onRetry && (
              <Button size="small" onClick={onRetry}>
                {t('retry')}
              </Button>
            )}
        />
      )}
      {reply.cut && !reply.error && <Alert type="warning" showIcon message={t('cutOff')} action={onRetry && <Button size="small" onClick={onRetry}>{t('retry')}</Button>} />}
      {reply.stopped && <Typography.Text type="secondary">{t('stopped')}</Typography.Text>}
    </div>
  );
}

type LiveState = { question: string; reply: Reply } | null;
type LiveAction = { type: 'start'; question: string } | Action | { type: 'reset' };
function live(s: LiveState, a: LiveAction): LiveState {
  if (a.type === 'start') return { question: a.question, reply: emptyReply() };
  if (a.type === 'reset') return null;
  return s ? { ...s, reply: reduce(s.reply, a) } : s;
}

export default function Chat() {
  const { t, lang } = useI18n();
  const { id } = useParams();
  const nav = useNavigate();
  const [sessions, setSessions] = useState<SessionRow[]>([]);
  const [search, setSearch] = useState('');
  const [history, setHistory] = useState<Turn[]>([]);
  const [current, dispatch] = useReducer(live, null);
  const [input, setInput] = useState('');
  const [starters, setStarters] = useState<string[]>([]);
  const [renaming, setRenaming] = useState<SessionRow | null>(null);
  const [title, setTitle] = useState('');
  const [pageError, setPageError] = useState('');
  const [modal, modalHolder] = Modal.useModal(); // within the ConfigProvider (language, theme)
  const abort = useRef<AbortController | null>(null);
  const bottom = useRef<HTMLDivElement>(null);
  const busy = !!current && !current.reply.finished;

  const loadSessions = useCallback(async () => {
    try {
      const d = unwrap(await api.GET('/api/v1/sessions', { params: { query: { limit: 100 } } }));
      setSessions(d.sessions ?? []);
    } catch (e) {
      setPageError((e as Error).message);
    }
  }, []);

  useEffect(() => {
    void loadSessions();
    api.GET('/api/v1/analytics/metrics', {}).then(
      (r) => {
        const groups = unwrap(r).groups ?? [];
        const metrics = groups.flatMap((g) => g.metrics ?? []).slice(0, 3);
        setStarters(
          metrics.flatMap((m, i) => {
            const n = m.display_name || m.name || '';
            return i === 0
              ? [lang === 'zh' ? `最近7天各店铺的${n}` : `${n} by shop last 7 days`, lang === 'zh' ? `最近30天的${n}趋势` : `${n} trend last 30 days`]
              : [lang === 'zh' ? `上个月的${n}` : `${n} last month`];
          }),
        );
      },
      () => setStarters([]),
    );
  }, [loadSessions, lang]);

  // History of the open conversation (not when the conversation was just created by the
  // reply on screen: that reply stays as it is).
  const adopt = useRef(false);
  useEffect(() => {
    if (adopt.current) {
      adopt.current = false;
      return;
    }
    dispatch({ type: 'reset' });
    if (!id) {
      setHistory([]);
      return;
    }
    api.GET('/api/v1/sessions/{conversation_id}/messages', { params: { path: { conversation_id: id }, query: { limit: 200 } } }).then(
      (r) => {
        const msgs = unwrap(r).messages ?? [];
        setHistory(msgs.map((m) => (m.role === 'user' ? { role: 'user', text: m.content ?? '' } : { role: 'assistant', reply: replyFromHistory(m) })));
      },
      (e) => setPageError((e as Error).message),
    );
  }, [id]);

  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' });
  }, [history, current]);

  const send = async (text: string) => {
    const message = text.trim();
    if (!message || busy) return;
    if (current) setHistory((h) => [...h, { role: 'user', text: current.question }, { role: 'assistant', reply: current.reply }]);
    dispatch({ type: 'start', question: message });
    setInput('');
    const ctrl = new AbortController();
    abort.current = ctrl;
    try {
      const res = await fetch('/api/v2/chat/message', {
        method: 'POST',
        headers: { ...(await authHeaders()), 'Content-Type': 'application/json', Accept: 'text/event-stream', 'Accept-Language': lang === 'zh' ? 'zh-CN' : 'en' },
        body: JSON.stringify({ message, conversation_id: id || undefined, stream: true }),
        signal: ctrl.signal,
      });
      if (!res.ok || !res.body) {
        const env = (await res.json().catch(() => null)) as { message?: string } | null;
        throw new ApiError(res.status, env?.message || res.statusText, res.status);
      }
      const conv = res.headers.get('X-Conversation-Id');
      // The answer's text is drawn first: the other events (thinking, plan, charts, the end)
      // are transitions, which React renders after the urgent text and which never hold it
      // back, though they often arrive in the same read as the first text.
      await readStream(res.body, (a) => (hasText(a) ? dispatch(a) : startTransition(() => dispatch(a))), ctrl.signal);
      if (conv && conv !== id) {
        adopt.current = true;
        void loadSessions();
        nav(`/chat/${conv}`, { replace: !id, state: { keep: true } });
      } else void loadSessions();
    } catch (e) {
      if (ctrl.signal.aborted) dispatch({ type: 'stopped' });
      else dispatch({ type: 'failed', message: (e as Error).message });
    }
  };

  const remove = (s: SessionRow) =>
    modal.confirm({
      title: t('deleteConfirm'),
      content: s.title,
      okText: t('delete'),
      okButtonProps: { danger: true },
      cancelText: t('cancel'),
      onOk: async () => {
        unwrap(await api.DELETE('/api/v1/sessions/{conversation_id}', { params: { path: { conversation_id: s.conversation_id } } }));
        if (s.conversation_id === id) nav('/chat');
        await loadSessions();
      },
    });

  const saveTitle = async () => {
    if (!renaming) return;
    unwrap(await api.PUT('/api/v1/sessions/{conversation_id}', { params: { path: { conversation_id: renaming.conversation_id } }, body: { title: title.trim(), update_mask: 'title' } }));
    setRenaming(null);
    await loadSessions();
  };

  const shown = useMemo(() => sessions.filter((s) => !search || (s.title ?? '').toLowerCase().includes(search.toLowerCase())), [sessions, search]);

  // What a delta of the live reply does not change is not rendered again for it: the
  // conversation list, the history, the workflow panel and the composer are memoized elements,
  // so a delta re-renders the live reply only (the first token is drawn sooner).
  const sendRef = useRef(send);
  sendRef.current = send;
  const sidebar = useMemo(
    () => (
        <aside aria-label={t('conversation')} style={{ display: 'flex', flexDirection: 'column', gap: 8, minHeight: 0 }}>
          <Button icon={<PlusOutlined />} onClick={() => nav('/chat')} block>
            {t('newChat')}
          </Button>
          <Input.Search aria-label={t('searchConversations')} placeholder={t('searchConversations')} allowClear value={search} onChange={(e) => setSearch(e.target.value)} />
          <div style={{ overflow: 'auto', flex: 1 }} data-testid="conversations">
            {shown.length === 0 ? (
              <Empty description={t('noConversations')} image={Empty.PRESENTED_IMAGE_SIMPLE} />
            ) : (
              <Conversations
                activeKey={id}
                onActiveChange={(k) => nav(`/chat/${k}`)}
                items={shown.map((s) => ({ key: s.conversation_id, label: s.title || s.conversation_id.slice(0, 8) }))}
                menu={(c) => ({
                  items: [
                    { key: 'rename', label: t('rename'), icon: <EditOutlined /> },
                    { key: 'delete', label: t('delete'), icon: <DeleteOutlined />, danger: true },
                  ],
                  onClick: ({ key, domEvent }) => {
                    domEvent.stopPropagation();
                    const s = sessions.find((x) => x.conversation_id === c.key);
                    if (!s) return;
                    if (key === 'rename') {
                      setRenaming(s);
                      setTitle(s.title ?? '');
                    } else remove(s);
                  },
                })}
              />
            )}
          </div>
        </aside>
    ),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [shown, sessions, id, search, t],
  );
  const historyView = useMemo(
    () => history.map((turn, i) => (turn.role === 'user' ? <UserBubble key={i} text={turn.text} /> : <ReplyView key={i} reply={turn.reply} />)),
    [history],
  );
  const workflowPanel = useMemo(
    () => id && <Collapse size="small" style={{ marginBottom: 8 }} items={[{ key: 'wf', label: t('workflow'), children: <Workflow conversationId={id} /> }]} />,
    [id, t],
  );
  const composer = useMemo(
    () => (
      <div data-testid="composer">
        <Sender
          aria-label={t('messageInput')}
          value={input}
          onChange={setInput}
          onSubmit={(v) => void sendRef.current(v)}
          loading={busy}
          onCancel={() => abort.current?.abort()}
          placeholder={t('askPlaceholder')}
          disabled={busy}
        />
      </div>
    ),
    [input, busy, t],
  );

  return (
    <div style={{ display: 'grid', gridTemplateColumns: '260px 1fr', gap: 16, height: 'calc(100vh - 104px)' }}>
      {sidebar}
      <section aria-label={t('chat')} style={{ display: 'flex', flexDirection: 'column', minHeight: 0 }}>
        {pageError && <Alert type="error" showIcon message={pageError} closable onClose={() => setPageError('')} />}
        <div style={{ flex: 1, overflow: 'auto', display: 'grid', gap: 12, alignContent: 'start', padding: '4px 4px 12px' }} data-testid="messages">
          {history.length === 0 && !current && starters.length > 0 && (
            <Prompts title={t('starters')} items={starters.map((s) => ({ key: s, description: s }))} onItemClick={(info) => void send(String(info.data.description))} wrap />
          )}
          {historyView}
          {current && (
            <>
              <UserBubble text={current.question} />
              <ReplyView live reply={current.reply} onRetry={current.reply.finished ? () => void send(current.question) : undefined} />
            </>
          )}
          <div ref={bottom} />
        </div>
        {workflowPanel}
        {composer}
      </section>
      {modalHolder}
      <Modal open={!!renaming} title={t('rename')} onOk={() => void saveTitle()} onCancel={() => setRenaming(null)} okText={t('save')} cancelText={t('cancel')}>
        <Input aria-label={t('name')} value={title} onChange={(e) => setTitle(e.target.value)} maxLength={200} onPressEnter={() => void saveTitle()} />
      </Modal>
    </div>
  );
}

function UserBubble({ text }: { text: string }) {
  return (
    <div style={{ justifySelf: 'end', background: '#1d4ed8', color: '#fff', padding: '8px 12px', borderRadius: 12, maxWidth: '70%', whiteSpace: 'pre-wrap' }} data-testid="user-message">
      {text}
    </div>
  );
}
