// The login page: check the token against the service, keep it for this tab, go on.

import { saveToken } from "./common.js";

function next() {
  const wanted = new URLSearchParams(location.search).get("next") || "";
  // Only a page of this dashboard: never an address elsewhere.
  return /^\/ui\/[^/]/.test(wanted) && !wanted.startsWith("/ui/login") ? wanted : "/ui/tuning-jobs";
}

document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const value = document.getElementById("token").value.trim();
  const error = document.getElementById("error");
  const response = await fetch("/dashboard/tuning-jobs?limit=1", {
    headers: { Authorization: "Bearer " + value },
  });
  if (response.ok) {
    saveToken(value);
    location.assign(next());
  } else {
    error.textContent = response.status === 401 ? "The service refused this token." :
      `The service answered ${response.status}.`;
    error.classList.remove("hidden");
  }
});
