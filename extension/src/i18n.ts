// The popup's texts in English and Chinese (the browser's language chooses; the popup's
// switch overrides it for the session).
export const TEXTS = {
  en: {
    server: "Server address", tenant: "Tenant code", username: "User", password: "Password", captcha: "Characters in the image",
    signin: "Sign in", signout: "Sign out", signin_again: "The server signed you out: sign in again. Queued values are kept.",
    state: "Status", queued: "Queued", last_upload: "Last upload", next_upload: "Next upload", sync_now: "Sync now",
    collect_page: "Collect this page", interval: "Upload every", errors: "Errors", rejections: "Rejected values",
    shop_for: "Shop for", never: "never", server_default: "(server setting)", minutes: "min",
    st_idle: "idle", st_uploading: "uploading…", st_retrying: "retrying later", st_needs_login: "sign in again",
    st_update_required: "update required", st_error: "error",
    result: (a: number, d: number, r: number) => `${a} stored, ${d} already stored, ${r} rejected`,
    update_required: (v: string) => `Version ${v} is required: download and install it before uploading again.`,
    update_available: (v: string) => `Version ${v} is available.`, download: "Download",
    adhoc_ok: (t: string) => `Captured "${t}"`, adhoc_err: (e: string) => `Capture failed: ${e}`,
    pending: (n: number) => ` (${n} being sent)`, lang: "中文",
    captcha_required: "Too many failed sign-ins: type the characters in the image.",
    captcha_wrong: "Wrong characters: type the ones in the new image.",
  },
  zh: {
    server: "服务器地址", tenant: "租户代码", username: "用户名", password: "密码", captcha: "验证码",
    signin: "登录", signout: "退出登录", signin_again: "服务器已使您退出：请重新登录。待上传的数据会保留。",
    state: "状态", queued: "待上传", last_upload: "上次上传", next_upload: "下次上传", sync_now: "立即同步",
    collect_page: "采集当前页面", interval: "上传间隔", errors: "错误", rejections: "被拒绝的数据",
    shop_for: "店铺：", never: "从未", server_default: "（服务器设置）", minutes: "分钟",
    st_idle: "空闲", st_uploading: "上传中…", st_retrying: "稍后重试", st_needs_login: "需要重新登录",
    st_update_required: "需要更新", st_error: "出错",
    result: (a: number, d: number, r: number) => `已保存 ${a}，重复 ${d}，拒绝 ${r}`,
    update_required: (v: string) => `需要 ${v} 版本：请下载安装后再上传。`,
    update_available: (v: string) => `有新版本 ${v}。`, download: "下载",
    adhoc_ok: (t: string) => `已采集“${t}”`, adhoc_err: (e: string) => `采集失败：${e}`,
    pending: (n: number) => `（${n} 条上传中）`, lang: "English",
    captcha_required: "登录失败次数过多：请输入图片中的字符。",
    captcha_wrong: "验证码错误：请输入新图片中的字符。",
  },
};
export type Lang = keyof typeof TEXTS;
export type Texts = (typeof TEXTS)["en"];
