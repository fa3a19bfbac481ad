package io.amtuner.realyarn;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * Plays the ApplicationMaster of every app of type {@value #APP_TYPE}, so load needs no JVM per
 * job: the RM allocates each AM container under its real AM limit and a real NodeManager launches
 * it (a shell that waits for a marker file); this host then registers with the attempt's
 * AMRMToken, as Hadoop's own AMRMClient tests do, asks for the app's task containers, holds each
 * for its duration, releases it, unregisters and writes the marker so the AM container exits.
 *
 * <p>An app describes its work in its tags (YARN lowercases them): {@code
 * amtuner.maps=COUNTxMBxVCORESxSECONDS}, {@code amtuner.reduces=…} and {@code
 * amtuner.am=STARTUP_SxTEARDOWN_SxSLOWSTART}. Maps are asked STARTUP_S after the AM container
 * was allocated, as amtuner's simulator counts an AM's start-up; reduces once SLOWSTART of the
 * maps are done and every map is placed, and they hold their containers until the last map is
 * done (the job model of amtuner's simulator). An app with no tasks holds its AM until it is
 * killed, unless it has a {@code runs} tag.
 *
 * <p>{@code amtuner.runs=RUNSxIDLE_SxLINGER_S} makes the AM run its tasks RUNS times, as a Tez
 * session's {@code DAGAppMaster} runs one DAG per query and a Spark driver in the AM (cluster
 * mode: {@code ApplicationMaster}) one job per action: once a run's last task is done it holds
 * only its AM container for IDLE_S, then asks for the next run's tasks; after the last run it
 * stays LINGER_S before its tear-down (a session's {@code
 * tez.session.am.dag.submit.timeout.secs}; a long-lived service's life, with no tasks: a YARN
 * service's {@code ServiceMaster}).
 *
 * <p>Each AM registers within {@value #LAUNCH_POLL_MS} ms of its launch and then heartbeats at a
 * fixed rate of its own, as a MapReduce AM's allocator thread does: AMs do not share a phase, so
 * their asks and releases do not reach the RM all in one instant.
 *
 * <p>After every heartbeat the headroom the RM gave the AM ({@code
 * AllocateResponse.getAvailableResources}, what MapReduce's AM ramps its reduces within) is in
 * {@code headroom-APP_ID} beside the markers: {@code MB VCORES}.
 *
 * <p>A launcher (tags {@code amtuner.child.*}) plays Oozie's {@code LauncherAM}: its AM runs an
 * action's main class, which submits one child job and waits for it to end (Hive, Pig, Sqoop and
 * Java actions). STARTUP_S after its AM container was allocated it submits its child through the
 * RM's REST API, as its own user, with {@code amtuner.child.name=NAME}, {@code
 * amtuner.child.queue=QUEUE}, {@code amtuner.child.resource=MBxVCORES} and the child's own
 * {@code am}, {@code maps} and {@code reduces} tags; every heartbeat after, it asks the RM for the
 * child's state, and once that is final it tears down as a job does when its last task is done
 * (FAILED when the child did not succeed). Its AM holds AM share all the while.
 */
final class AmHost implements Runnable {
  static final String APP_TYPE = "AMTUNER";
  private static final Priority MAP = Priority.newInstance(20);
  private static final Priority REDUCE = Priority.newInstance(10);
  /** How often the host looks for launched AMs: each registers this soon after its launch. */
  private static final long LAUNCH_POLL_MS = 50;
  private static final Pattern APP_ID = Pattern.compile("\"application-id\"\\s*:\\s*\"([^\"]+)\"");
  private static final Pattern STATE = Pattern.compile("\"state\"\\s*:\\s*\"([A-Z_]+)\"");
  private static final Set<String> FINAL_STATES = Set.of("FINISHED", "FAILED", "KILLED");

  private final ResourceManager rm;
  private final YarnConfiguration conf;
  private final Path markers;
  private final long heartbeatMs;
  /** The RM's REST API (its web app), where launchers submit their children. */
  private final String rest;
  private final HttpClient http = HttpClient.newHttpClient();
  private final Map<ApplicationId, Am> ams = new HashMap<>();
  private final Set<ApplicationId> seen = new HashSet<>();
  private volatile boolean stopped;

  AmHost(ResourceManager rm, YarnConfiguration conf, Path markers, long heartbeatMs) {
    this.rm = rm;
    this.conf = conf;
    this.markers = markers;
    this.heartbeatMs = heartbeatMs;
    this.rest = WebAppUtils.getRMWebAppURLWithScheme(conf) + "/ws/v1/cluster";
  }

  /** One REST call as {@code user} (simple authentication); the body, or IOException. */
  private String call(String method, String path, String user, String json) throws IOException {
    String sep = path.contains("?") ? "&" : "?";
    HttpRequest.Builder req =
        HttpRequest.newBuilder(
                URI.create(rest + path + sep + "user.name="
                    + URLEncoder.encode(user, StandardCharsets.UTF_8)))
            .timeout(java.time.Duration.ofSeconds(10))
            .header("Accept", "application/json");
    req = json == null
        ? req.method(method, HttpRequest.BodyPublishers.noBody())
        : req.header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofString(json));
    try {
      HttpResponse<String> r = http.send(req.build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() / 100 != 2) {
        throw new IOException(method + " " + path + ": HTTP " + r.statusCode() + ": " + r.body());
      }
      return r.body();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(method + " " + path + " interrupted", e);
    }
  }

  private static String quoted(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  void stop() {
    stopped = true;
  }

  @Override
  public void run() {
    while (!stopped) {
      long now = System.currentTimeMillis();
      for (RMApp app : rm.getRMContext().getRMApps().values()) {
        RMAppAttempt attempt = app.getCurrentAppAttempt();
        if (APP_TYPE.equals(app.getApplicationType())
            && attempt != null
            && attempt.getAppAttemptState() == RMAppAttemptState.LAUNCHED
            && seen.add(app.getApplicationId())) {
          try {
            ams.put(app.getApplicationId(), new Am(app, attempt, now));
          } catch (RuntimeException e) {
            System.err.println("amtuner AM host: cannot register " + app.getApplicationId() + ": " + e);
          }
        }
      }
      long wake = now + LAUNCH_POLL_MS;
      for (Iterator<Am> it = ams.values().iterator(); it.hasNext(); ) {
        Am am = it.next();
        long at = System.currentTimeMillis();
        if (am.nextBeat <= at) {
          if (!am.beat(at)) {
            it.remove();
            continue;
          }
          // Its own fixed rate; one that fell a whole interval behind counts on from now.
          am.nextBeat = Math.max(am.nextBeat + heartbeatMs, at + 1);
        }
        wake = Math.min(wake, am.nextBeat);
      }
      long wait = wake - System.currentTimeMillis();
      if (wait > 0) {
        try {
          Thread.sleep(wait);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /** One task group of an app: COUNT containers of MB and VCORES, each held SECONDS. */
  private record Tasks(int count, int memoryMb, int vcores, long durationMs) {
    static Tasks parse(String spec) {
      String[] f = spec.split("x");
      return new Tasks(
          Integer.parseInt(f[0]), Integer.parseInt(f[1]), Integer.parseInt(f[2]),
          Math.round(Double.parseDouble(f[3]) * 1000));
    }

    Resource resource() {
      return Resource.newInstance(memoryMb, vcores);
    }
  }

  /** The AM of one app: its client, what it asked, what it holds, and when each task ends. */
  private final class Am {
    private final ApplicationId id;
    private final ContainerId amContainer;
    private final UserGroupInformation ugi;
    private final AMRMClient<ContainerRequest> client;
    private final Tasks maps;
    private final Tasks reduces;
    private final long startupMs;
    private final long teardownMs;
    private final double slowstart;
    private final long allocatedAt;
    /** RUNS, IDLE_S and LINGER_S of its {@code runs} tag (1, 0, 0 without one). */
    private final int runs;
    private final long idleMs;
    private final long lingerMs;
    private final boolean hasRuns;
    private int runsDone;
    /** When its current run's tasks may be asked for: its start-up's end, or its idle's. */
    private long runAt;
    /** When it heartbeats next: every AM at its own phase, from its registration on. */
    private long nextBeat;
    private final Map<ContainerId, Long> runningMaps = new HashMap<>();
    private final List<ContainerId> heldReduces = new ArrayList<>();
    private final Map<ContainerId, Long> runningReduces = new HashMap<>();
    private int mapsAsked;
    private int mapsPlaced;
    private int mapsDone;
    private int reducesAsked;
    private int reducesPlaced;
    private int reducesDone;
    private long doneAt = -1;
    private final String user;
    /** A launcher's child: its tags ({@code name}, {@code queue}, {@code resource}, {@code am},
     * {@code maps}, {@code reduces}), empty for any other app. */
    private final Map<String, String> child = new HashMap<>();
    private String childId;
    private boolean failed;

    Am(RMApp app, RMAppAttempt attempt, long now) {
      id = app.getApplicationId();
      amContainer = attempt.getMasterContainer().getId();
      Map<String, String> tags = new HashMap<>();
      for (String tag : app.getApplicationTags()) {
        int eq = tag.indexOf('=');
        if (tag.startsWith("amtuner.") && eq > 0) {
          tags.put(tag.substring("amtuner.".length(), eq), tag.substring(eq + 1));
        }
      }
      for (Map.Entry<String, String> e : tags.entrySet()) {
        if (e.getKey().startsWith("child.")) {
          child.put(e.getKey().substring("child.".length()), e.getValue());
        }
      }
      user = app.getUser();
      maps = tags.containsKey("maps") ? Tasks.parse(tags.get("maps")) : null;
      reduces = tags.containsKey("reduces") ? Tasks.parse(tags.get("reduces")) : null;
      String[] am = tags.getOrDefault("am", "0x0x1").split("x");
      startupMs = Math.round(Double.parseDouble(am[0]) * 1000);
      teardownMs = Math.round(Double.parseDouble(am[1]) * 1000);
      slowstart = Double.parseDouble(am[2]);
      hasRuns = tags.containsKey("runs");
      String[] r = tags.getOrDefault("runs", "1x0x0").split("x");
      runs = Integer.parseInt(r[0]);
      idleMs = Math.round(Double.parseDouble(r[1]) * 1000);
      lingerMs = Math.round(Double.parseDouble(r[2]) * 1000);

      Token<AMRMTokenIdentifier> token = attempt.getAMRMToken();
      token.setService(ClientRMProxy.getAMRMTokenService(conf));
      ugi = UserGroupInformation.createRemoteUser(attempt.getAppAttemptId().toString());
      ugi.addToken(token);
      client = AMRMClient.createAMRMClient();
      as(
          () -> {
            client.init(conf);
            client.start();
            client.registerApplicationMaster("localhost", 0, "");
            return null;
          });
      RMContainer container = rm.getResourceScheduler().getRMContainer(amContainer);
      allocatedAt = container != null ? container.getCreationTime() : now;
      runAt = allocatedAt + startupMs;
      nextBeat = now;
    }

    /** One AM heartbeat; false once the app is done (or gone: killed, or the RM stopped). */
    boolean beat(long now) {
      try {
        return as(() -> step(now));
      } catch (RuntimeException e) {
        // Killed, or the RM stopped; anything else is worth a line in the cluster's log.
        System.err.println("amtuner AM host: " + id + " stops heartbeating: " + e);
        client.stop();
        return false;
      }
    }

    private boolean step(long now) throws Exception {
      if (maps == null && reduces == null && child.isEmpty() && !hasRuns) {
        record(client.allocate(0f));
        return true;
      }
      if (doneAt >= 0) {
        if (now - doneAt < lingerMs + teardownMs) {
          record(client.allocate(1f));
          return true;
        }
        client.unregisterApplicationMaster(
            failed ? FinalApplicationStatus.FAILED : FinalApplicationStatus.SUCCEEDED, "", "");
        client.stop();
        Files.writeString(markers.resolve(amContainer.toString()), "");
        return false;
      }
      int mapCount = maps == null ? 0 : maps.count();
      int reduceCount = reduces == null ? 0 : reduces.count();
      boolean mapsStarted = now >= runAt;
      if (!child.isEmpty() && childId == null && mapsStarted) {
        try {
          childId = submitChild();
        } catch (IOException e) {
          System.err.println("amtuner AM host: " + id + " cannot submit its child: " + e);
          failed = true;
          doneAt = now;
          return true;
        }
      }
      if (maps != null && mapsAsked == 0 && mapsStarted) {
        for (; mapsAsked < mapCount; mapsAsked++) {
          client.addContainerRequest(new ContainerRequest(maps.resource(), null, null, MAP));
        }
      }
      if (reduces != null && reducesAsked == 0 && mapsStarted && mapsPlaced == mapCount
          && mapsDone >= slowstart * mapCount) {
        for (; reducesAsked < reduceCount; reducesAsked++) {
          client.addContainerRequest(new ContainerRequest(reduces.resource(), null, null, REDUCE));
        }
      }
      float progress = (mapsDone + reducesDone) / (float) Math.max(1, mapCount + reduceCount);
      AllocateResponse response = client.allocate(progress);
      record(response);
      for (Container c : response.getAllocatedContainers()) {
        boolean isMap = c.getPriority().equals(MAP);
        if (isMap ? mapsPlaced >= mapsAsked : reducesPlaced >= reducesAsked) {
          // More than was asked: the ask the RM held was not yet lowered by the removals sent
          // with this heartbeat (or, between runs, with the last run's). MapReduce's
          // RMContainerAllocator gives such containers back.
          client.releaseAssignedContainer(c.getId());
          continue;
        }
        Tasks tasks = isMap ? maps : reduces;
        client.removeContainerRequest(
            new ContainerRequest(tasks.resource(), null, null, isMap ? MAP : REDUCE));
        if (isMap) {
          mapsPlaced++;
          runningMaps.put(c.getId(), now + tasks.durationMs());
        } else {
          reducesPlaced++;
          heldReduces.add(c.getId());
        }
      }
      mapsDone += release(runningMaps, now);
      if (mapsDone == mapCount) {
        for (ContainerId held : heldReduces) {
          runningReduces.put(held, now + reduces.durationMs());
        }
        heldReduces.clear();
      }
      reducesDone += release(runningReduces, now);
      if (mapsStarted && mapsDone == mapCount && reducesDone == reduceCount && childEnded()) {
        if (runsDone + 1 < runs) {
          runsDone++;
          mapsAsked = mapsPlaced = mapsDone = reducesAsked = reducesPlaced = reducesDone = 0;
          runAt = now + idleMs;
        } else {
          doneAt = now;
        }
      }
      return true;
    }

    /** A launcher's child, submitted as the launcher's user (RM REST: new-application, then
     * apps); its id. Its AM container waits for its marker, as every app of the AM host's. */
    private String submitChild() throws IOException {
      String created = call("POST", "/apps/new-application", user, null);
      Matcher m = APP_ID.matcher(created);
      if (!m.find()) {
        throw new IOException("no application-id in " + created);
      }
      String[] resource = child.getOrDefault("resource", "1024x1").split("x");
      StringBuilder tags = new StringBuilder();
      for (String kind : List.of("am", "maps", "reduces")) {
        if (child.containsKey(kind)) {
          tags.append(tags.length() == 0 ? "" : ", ")
              .append(quoted("amtuner." + kind + "=" + child.get(kind)));
        }
      }
      String command =
          "while [ ! -e \"" + markers + "/$CONTAINER_ID\" ]; do sleep 0.5; done";
      String body =
          "{\"application-id\": " + quoted(m.group(1))
              + ", \"application-name\": " + quoted(child.getOrDefault("name", id + "-child"))
              + ", \"application-type\": " + quoted(APP_TYPE)
              + ", \"queue\": " + quoted(child.getOrDefault("queue", "default"))
              + ", \"max-app-attempts\": 1"
              + ", \"am-container-spec\": {\"commands\": {\"command\": " + quoted(command) + "}}"
              + ", \"resource\": {\"memory\": " + Integer.parseInt(resource[0])
              + ", \"vCores\": " + Integer.parseInt(resource[1]) + "}"
              + ", \"application-tags\": {\"tag\": [" + tags + "]}}";
      call("POST", "/apps", user, body);
      return m.group(1);
    }

    /** No child, or its state is final (FAILED or KILLED: the launcher fails too). */
    private boolean childEnded() throws IOException {
      if (child.isEmpty()) {
        return true;
      }
      if (childId == null) {
        return false;
      }
      Matcher m = STATE.matcher(call("GET", "/apps/" + childId + "/state", user, null));
      if (!m.find() || !FINAL_STATES.contains(m.group(1))) {
        return false;
      }
      failed = !m.group(1).equals("FINISHED");
      return true;
    }

    /** The headroom of this heartbeat, written whole (a reader never sees half a line). */
    private void record(AllocateResponse response) throws IOException {
      Resource headroom = response.getAvailableResources();
      if (headroom == null) {
        return;
      }
      Path file = markers.resolve("headroom-" + id);
      Path partial = markers.resolve(".headroom-" + id);
      Files.writeString(partial, headroom.getMemorySize() + " " + headroom.getVirtualCores() + "\n");
      Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private int release(Map<ContainerId, Long> running, long now) {
      int done = 0;
      var it = running.entrySet().iterator();
      while (it.hasNext()) {
        var e = it.next();
        if (e.getValue() <= now) {
          client.releaseAssignedContainer(e.getKey());
          it.remove();
          done++;
        }
      }
      return done;
    }

    private <T> T as(PrivilegedExceptionAction<T> action) {
      try {
        return ugi.doAs(action);
      } catch (IOException | InterruptedException e) {
        throw new IllegalStateException(id + ": " + e, e);
      }
    }
  }
}
