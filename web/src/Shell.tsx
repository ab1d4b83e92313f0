import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { Button, Layout, Menu, Space, Typography } from 'antd';
import { CodeOutlined, HomeOutlined, LineChartOutlined, LogoutOutlined, MessageOutlined, StarOutlined } from '@ant-design/icons';
import { useLocation, useNavigate } from 'react-router-dom';
import { api, logout, unwrap, type Schemas, type Session } from './lib/api';
import { useI18n, type Key } from './lib/i18n';
import { LangSwitch } from './LangSwitch';

type Init = Schemas['shopmind.tenant.v1.GetInitResponse'];
type MenuNode = Schemas['shopmind.tenant.v1.Menu'];

interface InitState {
  init: Init | null;
  can: (permission: string) => boolean;
  isAdmin: boolean;
}
const InitCtx = createContext<InitState>({ init: null, can: () => false, isAdmin: false });
export const useInit = () => useContext(InitCtx);

// The console's pages and the menu paths (tenant menus, /auth/init) that grant them: a page
// shows in the navigation when the user's menus include its path.
const pages: { key: string; label: Key; menu: string; icon: ReactNode }[] = [
  { key: '/home', label: 'home', menu: '/dashboard', icon: <HomeOutlined /> },
  { key: '/chat', label: 'chat', menu: '/chat', icon: <MessageOutlined /> },
  { key: '/explorer', label: 'explorer', menu: '/analysis/metrics', icon: <LineChartOutlined /> },
  { key: '/sql', label: 'sqlLab', menu: '/analysis/query', icon: <CodeOutlined /> },
];

function menuPaths(nodes: MenuNode[] | undefined, out = new Set<string>()) {
  for (const n of nodes ?? []) {
    if (n.path) out.add(n.path);
    menuPaths(n.children, out);
  }
  return out;
}

/** favoriteRoute maps a favorite (a menu path or a metric) to a console route. */
function favoriteRoute(f: Schemas['shopmind.tenant.v1.Favorite']): string {
  const p = pages.find((x) => x.menu === f.path || x.menu === f.target_key);
  if (p) return p.key;
  if (f.type === 'metric') return `/explorer?metric=${encodeURIComponent(f.target_key ?? '')}`;
  return f.path?.startsWith('/') ? f.path : '/home';
}

export function Shell({ session, children }: { session: Session; children: ReactNode }) {
  const { t } = useI18n();
  const nav = useNavigate();
  const loc = useLocation();
  const [init, setInit] = useState<Init | null>(null);

  useEffect(() => {
    api.GET('/api/v1/tenant/auth/init').then((r) => setInit(unwrap(r)), () => setInit(null));
  }, [session.tenant, session.username]);

  const perms = new Set(init?.permissions ?? []);
  const isAdmin = init?.user?.is_admin === true;
  const can = (p: string) => isAdmin || perms.has(p) || perms.has('*');
  const paths = menuPaths(init?.menus);
  const visible = pages.filter((p) => paths.has(p.menu));
  const favs = init?.favorites ?? [];
  const selected = '/' + (loc.pathname.split('/')[1] ?? '');

  const items = [
    ...visible.map((p) => ({ key: p.key, icon: p.icon, label: t(p.label) })),
    ...(favs.length
      ? [
          {
            type: 'group' as const,
            key: 'favorites',
            label: t('favorites'),
            children: favs.map((f, i) => ({ key: `fav:${i}:${favoriteRoute(f)}`, icon: <StarOutlined />, label: f.title })),
          },
        ]
      : []),
  ];

  return (
    <InitCtx.Provider value={{ init, can, isAdmin }}>
      <Layout style={{ minHeight: '100vh' }}>
        <Layout.Sider width={216} theme="light" style={{ borderRight: '1px solid #e5e7eb' }}>
          <div style={{ padding: '16px 20px', fontWeight: 700, fontSize: 18 }}>ShopMind</div>
          <nav aria-label="main">
            <Menu
              mode="inline"
              selectedKeys={[selected]}
              items={items}
              onClick={(e) => nav(e.key.startsWith('fav:') ? e.key.split(':').slice(2).join(':') : e.key)}
            />
          </nav>
        </Layout.Sider>
        <Layout>
          <Layout.Header style={{ background: '#fff', borderBottom: '1px solid #e5e7eb', display: 'flex', justifyContent: 'flex-end', alignItems: 'center', paddingInline: 20 }}>
            <Space size="middle">
              <LangSwitch />
              <Typography.Text data-testid="whoami">
                {session.username} @ {session.tenant} · {session.env}
              </Typography.Text>
              <Button icon={<LogoutOutlined />} onClick={() => void logout().then(() => nav('/login'))}>
                {t('signOut')}
              </Button>
            </Space>
          </Layout.Header>
          <Layout.Content style={{ padding: 20 }}>
            <main>{children}</main>
          </Layout.Content>
        </Layout>
      </Layout>
    </InitCtx.Provider>
  );
}
