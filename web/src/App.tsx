import { lazy, Suspense, useEffect, useState, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router-dom';
import { ConfigProvider, Spin } from 'antd';
import enUS from 'antd/locale/en_US';
import zhCN from 'antd/locale/zh_CN';
import { I18nProvider, useI18n } from './lib/i18n';
import { getSession, onSession, type Session } from './lib/api';
import { Login } from './pages/Login';
import { Shell } from './Shell';

// Every page but sign-in is its own chunk, loaded when opened (charts inside them load later
// still, when a chart is drawn): the sign-in page's JavaScript stays small.
const Home = lazy(() => import('./pages/Home'));
const Chat = lazy(() => import('./pages/Chat'));
const Explorer = lazy(() => import('./pages/Explorer'));
const SqlLab = lazy(() => import('./pages/SqlLab'));
const Nl2sql = lazy(() => import('./pages/Nl2sql'));

// Secondary texts darker than antd's defaults: axe's contrast check (4.5:1) passes on white.
const theme = {
  token: {
    colorPrimary: '#1d4ed8',
    colorSuccess: '#237804',
    colorError: '#c0161d',
    colorWarning: '#ad6800',
    colorTextSecondary: 'rgba(0, 0, 0, 0.65)',
    colorTextTertiary: 'rgba(0, 0, 0, 0.6)',
    colorTextDescription: 'rgba(0, 0, 0, 0.6)',
    colorTextQuaternary: 'rgba(0, 0, 0, 0.58)',
    colorTextPlaceholder: 'rgba(0, 0, 0, 0.55)',
    colorTextDisabled: 'rgba(0, 0, 0, 0.55)',
  },
};

function Loading() {
  const { t } = useI18n();
  return <Spin tip={t('loading')} style={{ margin: 48 }}><div /></Spin>;
}

function Routed() {
  const { lang } = useI18n();
  const [session, setSession] = useState<Session | null>(getSession);
  useEffect(() => {
    const off = onSession(setSession);
    return () => {
      off();
    };
  }, []);
  const page = (el: ReactNode) => (session ? <Shell session={session}><Suspense fallback={<Loading />}>{el}</Suspense></Shell> : <Navigate to="/login" replace />);
  return (
    <ConfigProvider locale={lang === 'zh' ? zhCN : enUS} theme={theme} button={{ autoInsertSpace: false }}>
      <BrowserRouter>
        <Routes>
          <Route path="/login" element={session ? <Navigate to="/chat" replace /> : <Login />} />
          <Route path="/" element={<Navigate to={session ? '/chat' : '/login'} replace />} />
          <Route path="/home" element={page(<Home />)} />
          <Route path="/chat" element={page(<Chat />)} />
          <Route path="/chat/:id" element={page(<Chat />)} />
          <Route path="/explorer" element={page(<Explorer />)} />
          <Route path="/sql" element={page(<SqlLab />)} />
          <Route path="/nl2sql" element={page(<Nl2sql />)} />
          <Route path="*" element={page(<NotFound />)} />
        </Routes>
      </BrowserRouter>
    </ConfigProvider>
  );
}

function NotFound() {
  const { t } = useI18n();
  return <p role="alert" style={{ padding: 24 }}>{t('notFound')}</p>;
}

export function App() {
  return (
    <I18nProvider>
      <Routed />
    </I18nProvider>
  );
}
