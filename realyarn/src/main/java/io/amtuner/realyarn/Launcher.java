package io.amtuner.realyarn;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.service.AbstractService;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;

/**
 * Starts Hadoop's own ResourceManager and NodeManagers in this JVM (MiniYARNCluster), writes their
 * real addresses to a ready file, hosts the AMs of the apps submitted for load, and stops the
 * cluster when stdin says {@code quit} or closes.
 *
 * <p>Every scheduler setting comes from the conf directory first on the classpath, because
 * {@code AdminService.refreshQueues} re-reads yarn-site.xml and the scheduler file from there: a
 * setting made in code would be lost on the first refresh.
 *
 * <p>Usage: {@code Launcher NODES READY_FILE MARKER_DIR AM_HEARTBEAT_MS}. Exit code 0 after
 * {@code quit}, 1 when the cluster could not start (the reason is on stderr).
 */
public final class Launcher {
  private Launcher() {}

  public static void main(String[] args) {
    try {
      run(Integer.parseInt(args[0]), Path.of(args[1]), Path.of(args[2]), Long.parseLong(args[3]));
    } catch (Throwable e) {
      e.printStackTrace();
      // Non-daemon threads of a half-started cluster would otherwise keep the JVM alive.
      System.exit(1);
    }
  }

  private static void run(int nodes, Path ready, Path markers, long amHeartbeatMs) throws Exception {
    AtomicReference<Object> rmPipeline = new AtomicReference<>();
    AbstractService.registerGlobalListener(
        service -> {
          if (service instanceof ResourceManager && service.isInState(Service.STATE.STARTED)) {
            rmPipeline.set(guicePipeline(null));
          }
        });
    MiniYARNCluster cluster = new MiniYARNCluster("amtuner", 1, nodes, 1, 1);
    cluster.init(new YarnConfiguration());
    cluster.start();
    if (!cluster.waitForNodeManagersToConnect(60_000)) {
      throw new IllegalStateException(nodes + " NodeManagers did not register within 60 s");
    }
    // Guice keeps one servlet pipeline per JVM: each NodeManager's web app replaced the RM's, so
    // the RM's pages (/cluster, /cluster/scheduler) answered 404. Put the RM's back; no test reads
    // the NodeManagers' pages.
    guicePipeline(rmPipeline.get());

    ResourceManager rm = cluster.getResourceManager();
    Configuration rmConf = rm.getConfig();
    AmHost host = new AmHost(rm, new YarnConfiguration(rmConf), markers, amHeartbeatMs);
    Thread hostThread = new Thread(host, "amtuner-am-host");
    hostThread.setDaemon(true);
    hostThread.start();

    String json =
        "{\"webapp\": \"" + rmConf.get(YarnConfiguration.RM_WEBAPP_ADDRESS) + "\", "
            + "\"admin\": \"" + rmConf.get(YarnConfiguration.RM_ADMIN_ADDRESS) + "\", "
            + "\"rm\": \"" + rmConf.get(YarnConfiguration.RM_ADDRESS) + "\", "
            + "\"scheduler\": \"" + rmConf.get(YarnConfiguration.RM_SCHEDULER_ADDRESS) + "\", "
            + "\"hadoop_version\": \"" + VersionInfo.getVersion() + "\", "
            + "\"nodes\": " + nodes + ", "
            + "\"pid\": " + ProcessHandle.current().pid() + "}\n";
    Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
    Files.writeString(tmp, json);
    Files.move(tmp, ready, StandardCopyOption.ATOMIC_MOVE);

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.strip().equals("quit")) {
      // Only "quit" (or the end of stdin) means anything.
    }
    host.stop();
    // No graceful MiniYARNCluster.stop(): each NodeManager waits about 17 s for apps and RPC
    // servers, and nothing here outlives the JVM but the containers, which the caller reaps.
    Runtime.getRuntime().halt(0);
  }

  /** Reads (value null) or sets Guice's JVM-wide GuiceFilter pipeline. */
  private static Object guicePipeline(Object value) {
    try {
      Class<?> filter =
          Class.forName("org.apache.hadoop.shaded.com.google.inject.servlet.GuiceFilter");
      Field field = filter.getDeclaredField("pipeline");
      field.setAccessible(true);
      if (value != null) {
        field.set(null, value);
      }
      return field.get(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot reach Guice's servlet pipeline", e);
    }
  }
}
