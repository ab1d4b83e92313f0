-- +goose Up
-- The tenant service's schema: tenants, organisations (a tree), users, roles and their
-- permission codes, menus (a tree of menus, buttons and API permissions), favorites, and
-- the login machinery (captchas, login failures, refresh-token families).
CREATE SCHEMA tenant;

CREATE TABLE tenant.tenants (
    id         bigserial PRIMARY KEY,
    code       text        NOT NULL UNIQUE,
    name       text        NOT NULL,
    status     text        NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant.orgs (
    id         bigserial PRIMARY KEY,
    tenant_id  bigint      NOT NULL REFERENCES tenant.tenants (id) ON DELETE CASCADE,
    parent_id  bigint      REFERENCES tenant.orgs (id) ON DELETE CASCADE,
    code       text        NOT NULL,
    name       text        NOT NULL,
    status     text        NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    sort_order int         NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, code)
);

CREATE TABLE tenant.users (
    id            bigserial PRIMARY KEY,
    tenant_id     bigint      NOT NULL REFERENCES tenant.tenants (id) ON DELETE CASCADE,
    username      text        NOT NULL,
    nickname      text        NOT NULL DEFAULT '',
    email         text        NOT NULL DEFAULT '',
    phone         text        NOT NULL DEFAULT '',
    password_hash text        NOT NULL,
    org_id        bigint      REFERENCES tenant.orgs (id) ON DELETE SET NULL,
    status        text        NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    is_admin      boolean     NOT NULL DEFAULT false,
    last_login_at timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, username)
);

CREATE TABLE tenant.roles (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint      NOT NULL REFERENCES tenant.tenants (id) ON DELETE CASCADE,
    code        text        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    status      text        NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, code),
    UNIQUE (tenant_id, id)
);

CREATE TABLE tenant.role_permissions (
    role_id bigint NOT NULL REFERENCES tenant.roles (id) ON DELETE CASCADE,
    code    text   NOT NULL,
    PRIMARY KEY (role_id, code)
);

CREATE TABLE tenant.user_roles (
    user_id bigint NOT NULL REFERENCES tenant.users (id) ON DELETE CASCADE,
    role_id bigint NOT NULL REFERENCES tenant.roles (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, role_id)
);
CREATE INDEX user_roles_role ON tenant.user_roles (role_id);

CREATE TABLE tenant.menus (
    id         bigserial PRIMARY KEY,
    tenant_id  bigint      NOT NULL REFERENCES tenant.tenants (id) ON DELETE CASCADE,
    parent_id  bigint      REFERENCES tenant.menus (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    title      text        NOT NULL,
    path       text        NOT NULL DEFAULT '',
    component  text        NOT NULL DEFAULT '',
    icon       text        NOT NULL DEFAULT '',
    type       text        NOT NULL CHECK (type IN ('menu', 'button', 'api')),
    permission text        NOT NULL DEFAULT '',
    sort_order int         NOT NULL DEFAULT 0,
    hidden     boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE tenant.role_menus (
    role_id bigint NOT NULL REFERENCES tenant.roles (id) ON DELETE CASCADE,
    menu_id bigint NOT NULL REFERENCES tenant.menus (id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, menu_id)
);

CREATE TABLE tenant.favorites (
    user_id    bigint NOT NULL REFERENCES tenant.users (id) ON DELETE CASCADE,
    position   int    NOT NULL,
    type       text   NOT NULL,
    target_key text   NOT NULL,
    title      text   NOT NULL,
    path       text   NOT NULL DEFAULT '',
    sort_order int    NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, position),
    UNIQUE (user_id, type, target_key)
);

-- Captcha answers live server-side so any replica can check them; single use.
CREATE TABLE tenant.captchas (
    id          text        PRIMARY KEY,
    answer_hash bytea       NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX captchas_expires_at ON tenant.captchas (expires_at);

-- Failed logins per tenant code and username (also for unknown ones, so probing is throttled alike).
CREATE TABLE tenant.login_failures (
    tenant_code text        NOT NULL,
    username    text        NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_key ON tenant.login_failures (tenant_code, username, failed_at);

CREATE TABLE tenant.login_locks (
    tenant_code  text        NOT NULL,
    username     text        NOT NULL,
    locked_until timestamptz NOT NULL,
    PRIMARY KEY (tenant_code, username)
);

-- Refresh tokens: one row per issued refresh token; a family is one login's chain of rotations.
CREATE TABLE tenant.refresh_tokens (
    id          text        PRIMARY KEY,
    family      text        NOT NULL,
    user_id     bigint      NOT NULL REFERENCES tenant.users (id) ON DELETE CASCADE,
    tenant_id   bigint      NOT NULL,
    audience    text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_family ON tenant.refresh_tokens (family);

-- +goose Down
DROP SCHEMA tenant CASCADE;
