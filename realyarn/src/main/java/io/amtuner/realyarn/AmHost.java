package io.amtuner.realyarn;

import java.io.IOException;
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
 * killed.
 *
 * <p>Each AM registers within {@value #LAUNCH_POLL_MS} ms of its launch and then heartbeats at a
 * fixed rate of its own, as a MapReduce AM's allocator thread does: AMs do not share a phase, so
 * their asks and releases do not reach the RM all in one instant.
 *
 * <p>After every heartbeat the headroom the RM gave the AM ({@code
 * AllocateResponse.getAvailableResources}, what MapReduce's AM ramps its reduces within) is in
 * {@code headroom-APP_ID} beside the markers: {@code MB VCORES}.
 */
final class AmHost implements Runnable {
  static final String APP_TYPE = "AMTUNER";
  private static final Priority MAP = Priority.newInstance(20);
  private static final Priority REDUCE = Priority.newInstance(10);
  /** How often the host looks for launched AMs: each registers this soon after its launch. */
  private static final long LAUNCH_POLL_MS = 50;

  private final ResourceManager rm;
  private final YarnConfiguration conf;
  private final Path markers;
  private final long heartbeatMs;
  private final Map<ApplicationId, Am> ams = new HashMap<>();
  private final Set<ApplicationId> seen = new HashSet<>();
  private volatile boolean stopped;

  AmHost(ResourceManager rm, YarnConfiguration conf, Path markers, long heartbeatMs) {
    this.rm = rm;
    this.conf = conf;
    this.markers = markers;
    this.heartbeatMs = heartbeatMs;
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
      maps = tags.containsKey("maps") ? Tasks.parse(tags.get("maps")) : null;
      reduces = tags.containsKey("reduces") ? Tasks.parse(tags.get("reduces")) : null;
      String[] am = tags.getOrDefault("am", "0x0x1").split("x");
      startupMs = Math.round(Double.parseDouble(am[0]) * 1000);
      teardownMs = Math.round(Double.parseDouble(am[1]) * 1000);
      slowstart = Double.parseDouble(am[2]);

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
      if (maps == null && reduces == null) {
        record(client.allocate(0f));
        return true;
      }
      if (doneAt >= 0) {
        if (now - doneAt < teardownMs) {
          record(client.allocate(1f));
          return true;
        }
        client.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "", "");
        client.stop();
        Files.writeString(markers.resolve(amContainer.toString()), "");
        return false;
      }
      int mapCount = maps == null ? 0 : maps.count();
      int reduceCount = reduces == null ? 0 : reduces.count();
      boolean mapsStarted = now - allocatedAt >= startupMs;
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
        if (isMap ? mapsPlaced >= mapCount : reducesPlaced >= reduceCount) {
          // More than was asked: the ask the RM held was not yet lowered by the removals sent
          // with this heartbeat. MapReduce's RMContainerAllocator gives such containers back.
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
      if (mapsDone == mapCount && reducesDone == reduceCount) {
        doneAt = now;
      }
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
